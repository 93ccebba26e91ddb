// The invitation token of the page's address (?t=…): taken once, then kept out of the address bar, the history and
// every link's href (copied, shown on hover, read by an extension). It is put back only where the page goes on with it:
// the request that switches language, and a link followed. The server writes it into the language links for the page
// without JavaScript, whose address bar holds it anyway.
//
// A token survey's response carries a blind-signed credential instead of the token (credentialOnOpen): asked for when
// the page opens, not when it sends, so the moment of issuance is not the moment of the response; kept in this
// browser until the response is stored, so a reload asks nothing twice.
import { credentialSlot, obtainCredential } from "/js/deniable.js";

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

/** The credential of the invitation `token` (null: none; the token is then sent itself, as an older server takes it),
 * asked for now, while the respondent reads. A failure is not said here: the send names it (a used token, say). */
export function credentialOnOpen(surveyId, token) {
  if (!token) return Promise.resolve(null);
  return obtainCredential(window.location.origin, surveyId, token, { storage: window.localStorage }).catch(() => null);
}

/** Forget the kept credential once its response is stored (or kept in the outbox, which holds it in the body). */
export async function forgetCredential(surveyId, token) {
  if (token) window.localStorage.removeItem(await credentialSlot(surveyId, token));
}
