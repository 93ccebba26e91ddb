// Switching language keeps the answers given so far, in this page's memory only: the page is fetched in the other
// language and its words are laid over this one, element by element (the same template for the same version, so the
// same elements). Answers, drawn arms and groups, the section shown and focus stay as they are; nothing is stored.
// Where that cannot be done (another version published since, no connection), the link is followed as before.

// Elements the page's script writes (in the words of the moment) or that differ between two renderings: not matched.
const DYNAMIC = "script, #send-problem, #outbox-status, #draft-status, #progress, .problem, #sent-reports, #sent-body";
const WORDED_ATTRIBUTES = ["aria-label", "data-constraint", "title", "href"]; // href: the thank-you link's language

/** No connection: following the link would lose the answers as well as fail, so the page stays. */
export class Offline extends Error {}

/** The survey page at `href` ({page: its Document, data: its survey data}); Offline without a connection, an Error
 * for any answer but a page. */
export async function fetchPage(href) {
  let response;
  try {
    response = await fetch(href, { credentials: "same-origin" });
  } catch {
    throw new Offline();
  }
  if (!response.ok) throw new Error(`status ${response.status}`);
  const page = new DOMParser().parseFromString(await response.text(), "text/html");
  return { page, data: JSON.parse(page.getElementById("survey-data").textContent) };
}

function elementsOf(root) {
  const walker = root.ownerDocument.createTreeWalker(root, NodeFilter.SHOW_ELEMENT, {
    acceptNode: (node) => (node.matches(DYNAMIC) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const elements = [root];
  while (walker.nextNode()) elements.push(walker.currentNode);
  return elements;
}

const ownTexts = (element) => [...element.childNodes].filter((node) => node.nodeType === Node.TEXT_NODE);

/** Pairs of this page's elements and the other language's, checked to be the same elements before any changes. */
function matchPages(here, there) {
  const [mine, theirs] = [elementsOf(here), elementsOf(there)];
  if (mine.length !== theirs.length) throw new Error("the pages differ");
  return mine.map((element, i) => {
    const other = theirs[i];
    if (element.tagName !== other.tagName || ownTexts(element).length !== ownTexts(other).length) throw new Error("the pages differ");
    return [element, other];
  });
}

/** Lay `there`'s words (texts and worded attributes) over `here`, element by element; an Error, before any change,
 * where the two are not the same elements. */
export function layWordsOver(here, there) {
  for (const [element, other] of matchPages(here, there)) {
    ownTexts(other).forEach((text, i) => { ownTexts(element)[i].data = text.data; });
    for (const name of WORDED_ATTRIBUTES) if (other.hasAttribute(name)) element.setAttribute(name, other.getAttribute(name));
  }
}
