// The invitation token of the page's address (?t=…): taken once, then kept out of the address bar, the history and
// every link's href (copied, shown on hover, read by an extension). It is put back only where the page goes on with it:
// the request that switches language, and a link followed. The server writes it into the language links for the page
// without JavaScript, whose address bar holds it anyway.

/** The token the page was opened with (null: none), the address bar and the language links cleared of it. */
export function takeInvitation() {
  const token = new URLSearchParams(window.location.search).get("t");
  if (token) {
    const asked = new URLSearchParams(window.location.search).get("lang");
    history.replaceState(null, "", window.location.pathname + (asked ? `?lang=${encodeURIComponent(asked)}` : ""));
    clearLanguageLinks();
  }
  return token;
}

/** The language links without the token (again, after a switch laid another page's hrefs over them). */
export function clearLanguageLinks() {
  for (const link of document.querySelectorAll(".languages a")) {
    const url = new URL(link.href);
    if (!url.searchParams.has("t")) continue;
    url.searchParams.delete("t");
    link.href = url.toString();
  }
}

/** `href` with the invitation `token` put in (as it is without one). */
export function invited(href, token) {
  if (!token) return href;
  const url = new URL(href, window.location.href);
  url.searchParams.set("t", token);
  return url.toString();
}
