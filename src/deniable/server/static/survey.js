// The respondent page: skip logic and sections as the respondent answers, checks of required
// answers and ranges, then randomization in the browser with deniable.js at the final send.
// Only the reports leave the page; true answers are never sent and never stored (no cookies, no URL) unless the
// respondent asks to keep them in this browser to finish later (a draft: resume.js): they stay in
// the form until the server has the reports, so a refused send can
// be tried again without typing them twice, and the form goes once it is sent. With no connection
// at all, the randomized body (never an answer) waits in the outbox (localStorage) and is sent
// when the browser is back online or the survey is opened again.
import { Memo, Outbox, Survey, drawOrder, isUnreachable, newIdempotencyKey, parseFraction, postResponse } from "/js/deniable.js";
import { DraftStore, draftExpiry, inputState, isOrderOf, restoreInput } from "./resume.js";
import { clearLanguageLinks, credentialOnOpen, forgetCredential, invited, takeInvitation } from "./invitation.js";
import { Offline, fetchPage, layWordsOver } from "./language.js";
import { SectionClock, sectionOf } from "./timing.js";
import { describe, format, sendProblem } from "./wording.js";

const data = JSON.parse(document.getElementById("survey-data").textContent);
let words = data.messages; // replaced when the respondent switches language
const survey = Survey.fromSpec(data.spec);
const form = document.getElementById("survey-form");
const coinForm = document.getElementById("coin-form");
const problem = document.getElementById("send-problem");
const formProblem = document.getElementById("form-problem");
const progress = document.getElementById("progress");
const [backButton, nextButton, sendButton] = ["back", "next", "send"].map((id) => document.getElementById(id));
const token = takeInvitation(); // kept out of the address bar, the history and the links (invitation.js)
const credential = credentialOnOpen(survey.id, token); // sent instead of the token: unlinkable to the invitation

coinForm.remove();
document.getElementById("device-words").hidden = false;
// Randomized order (the spec's randomize and randomize_sections): drawn here with the page's CSPRNG, a source of its
// own, once per page load, and laid over a page fetched in another language too. Never sent and never stored: a
// response is the same whatever the order it was asked in.
let order = survey.hasRandomOrder ? drawOrder(survey) : null; // a resumed draft brings back the order it was kept in

/** Put the sections, the randomized sections' items and the shuffled questions' options of `root`'s answer form in
 * `order`'s order (the server renders them in the spec's). */
function applyOrder(root) {
  const answerForm = root.querySelector("#survey-form");
  const bySection = new Map([...answerForm.querySelectorAll("section.section")].map((el) => [el.dataset.section || null, el]));
  const end = answerForm.querySelector("#form-problem");
  for (const id of order.sections) answerForm.insertBefore(bySection.get(id), end);
  for (const [id, itemIds] of Object.entries(order.items)) {
    const section = bySection.get(id);
    section.append(...itemIds.map((itemId) => section.querySelector(`:scope > [data-item="${CSS.escape(itemId)}"]`)));
  }
  for (const [id, values] of Object.entries(order.options)) {
    const fieldset = answerForm.querySelector(`#q-${CSS.escape(id)}`);
    for (const container of [fieldset, ...fieldset.querySelectorAll(":scope > .arm")]) { // a split ballot's two arms
      const labels = [...container.querySelectorAll(":scope > label.option")];
      if (!labels.length) continue;
      const byValue = new Map(labels.map((label) => [label.querySelector("input").value, label]));
      const after = labels[labels.length - 1].nextSibling;
      for (const value of values) container.insertBefore(byValue.get(value), after);
    }
  }
}
if (order) applyOrder(document);
// A survey that asks for consent shows its questions once the respondent agrees (nothing is sent for it: agreeing
// is what answering at all says); without that step the form shows at once.
const consent = document.getElementById("consent");
if (consent) {
  const agree = document.getElementById("consent-agree");
  agree.hidden = false;
  agree.addEventListener("click", () => {
    consent.hidden = true;
    form.hidden = false;
    if (timing) timing.timeIn(paged ? sectionOf(visibleSections()[current]) : sectionOf(form.querySelector("section.section")));
    form.querySelector("h2, legend, input, button")?.focus();
  }, { once: true });
} else {
  form.hidden = false;
}
const outbox = openOutbox();
// A repeated survey: the device's panel secret (never an answer), kept from wave to wave. Without storage
// every wave would draw afresh and spend the guarantee again, so the form is not offered then.
const memo = survey.repeated ? openMemo() : null;
// The arm and group each question shows are the device's, derived from a secret kept on it (a panel's memo; for a
// one-off survey a secret of its own, used for nothing else): a reload shows the same ones, so reloading until a
// liked arm or group appears no longer picks it. Arms and groups are public markers, never answers. Without storage
// they are drawn afresh, and every estimate still tests them against the design's shares.
const drawsSomething = Object.values(survey.questions).some((question) => question.splitBallot || question.mechanism.groups);
const draws = memo ?? (drawsSomething ? openDraws() : null); // a survey without arms or groups stores nothing

function openDraws() {
  try {
    return new Memo(window.localStorage, "deniable.draws");
  } catch {
    return null;
  }
}

function openMemo() {
  try {
    return new Memo(window.localStorage);
  } catch {
    form.remove();
    problem.textContent = words.memo_unavailable;
    problem.hidden = false;
    return null;
  }
}
const outboxStatus = document.getElementById("outbox-status");

function openOutbox() {
  try {
    const outbox = new Outbox({ storage: window.localStorage });
    outbox.entries();
    return outbox;
  } catch {
    return null; // storage switched off: a failed send keeps the answers on the page instead
  }
}
// One body per set of answers: pressing "send" twice, or again after a lost acknowledgement, sends
// the same reports under the same key (stored once, and never a second randomization of the same
// answers); changed answers are a new response with a new key.
let pending = null; // {answers (as JSON), body}: in this page's memory only
const sections = [...form.querySelectorAll("section.section")];
const paged = sections.length > 1 &&
  (form.dataset.layout === "paged" || (form.dataset.layout === "auto" && window.matchMedia("(max-width: 40em)").matches));
let current = 0;

// Save and resume (resume.js): kept in this browser only when the respondent asks, never sent.
const drafts = DraftStore.open(survey.id);
const draftBox = document.getElementById("draft");
const draftStatus = document.getElementById("draft-status");
const [saveDraftButton, forgetDraftButton] = ["save-draft", "forget-draft"].map((id) => document.getElementById(id));
let keepingDraft = false;
let draftExpires = null; // ms since the epoch

function showDraftStatus(key) {
  const date = new Date(draftExpires ?? Date.now()).toLocaleString(data.lang, { dateStyle: "long", timeStyle: "short" });
  draftStatus.textContent = format(words[key], { date });
  draftStatus.dataset.word = key;
  forgetDraftButton.hidden = !keepingDraft;
  draftBox.hidden = false;
}

function saveDraft() {
  if (!drafts) return false;
  const answers = {};
  for (const fieldset of form.querySelectorAll("fieldset.question")) {
    const value = inputState(fieldset.dataset.type, activeInputs(fieldset));
    if (value !== null && !(Array.isArray(value) && !value.length)) answers[fieldset.dataset.question] = value;
  }
  draftExpires ??= draftExpiry(survey.schedule.closes);
  return drafts.save({ hash: data.hash, expires: draftExpires, section: current, answers, order });
}

function dropDraft() {
  drafts?.remove();
  keepingDraft = false;
  draftExpires = null;
}

/** The draft kept in this browser for this survey, filled in; one for another version, or expired, removed. */
function resumeDraft() {
  if (!drafts) return;
  saveDraftButton.hidden = false;
  const draft = drafts.read();
  if (!draft) return;
  if (draft.hash !== data.hash || !draft.answers || typeof draft.answers !== "object") {
    dropDraft();
    showDraftStatus("draft_stale");
    return;
  }
  if (!(draft.expires > Date.now())) {
    dropDraft();
    return;
  }
  for (const fieldset of form.querySelectorAll("fieldset.question")) {
    const id = fieldset.dataset.question;
    if (Object.hasOwn(draft.answers, id)) restoreInput(fieldset.dataset.type, activeInputs(fieldset), draft.answers[id]);
  }
  if (order && isOrderOf(draft.order, order)) { // asked again in the order it was kept in
    order = draft.order;
    applyOrder(document);
    sections.splice(0, sections.length, ...form.querySelectorAll("section.section"));
  }
  keepingDraft = true;
  draftExpires = Math.min(draft.expires, draftExpiry(survey.schedule.closes));
  current = Number.isInteger(draft.section) ? draft.section : 0;
  if (consent) { // agreed before the draft was kept
    consent.hidden = true;
    form.hidden = false;
  }
  showDraftStatus("draft_restored");
}

saveDraftButton.addEventListener("click", () => {
  keepingDraft = saveDraft();
  if (keepingDraft) showDraftStatus("draft_saved");
});
forgetDraftButton.addEventListener("click", () => {
  dropDraft();
  showDraftStatus("draft_forgotten");
  saveDraftButton.focus();
});
form.addEventListener("input", () => {
  if (keepingDraft) saveDraft();
});

// Section times (timing.js), when the spec asks for them.
const timing = survey.quality?.section_times ? new SectionClock() : null;

if (timing) {
  form.addEventListener("focusin", (event) => {
    const section = sectionOf(event.target); // outside every section (the send button): the last one goes on
    if (!paged && section !== null) timing.timeIn(section);
  });
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) timing.pause(); // away: not counted
    else timing.resume();
  });
}

/** The inputs a respondent answers with: a split ballot's shown arm only. */
function activeInputs(fieldset) {
  const arm = fieldset.dataset.arm;
  return [...(arm ? fieldset.querySelector(`.arm[data-arm="${arm}"]`) : fieldset).querySelectorAll("input")];
}

function readAnswer(fieldset) {
  const inputs = activeInputs(fieldset);
  switch (fieldset.dataset.type) {
    case "multi_select":
      return inputs.filter((i) => i.checked).map((i) => i.value);
    case "number": {
      const text = inputs[0].value.trim();
      return text === "" ? null : text;
    }
    default: {
      const value = inputs.find((i) => i.checked)?.value ?? null;
      // Cheating detection, lie detector: the report carries the group whose instruction was shown (asked
      // directly in a split ballot, the answer is the plain yes or no).
      const grouped = fieldset.dataset.group && fieldset.dataset.arm !== "direct";
      return value !== null && grouped ? { group: fieldset.dataset.group, report: value } : value;
    }
  }
}

/** Each question with groups: the respondent's group (from the device's draws secret, or crypto.getRandomValues:
 * public, independent of every answer) and show that group's instruction only. */
function assignGroups() {
  for (const fieldset of form.querySelectorAll("fieldset.question")) {
    const mechanism = survey.questions[fieldset.dataset.question].mechanism;
    if (!mechanism.groups) continue;
    const id = fieldset.dataset.question;
    const group = draws ? survey.groupFor(id, draws) : mechanism.assignGroup(); // the same on every load and wave
    fieldset.dataset.group = group;
    for (const prompt of fieldset.querySelectorAll(".respondent-prompt[data-group]")) prompt.hidden = prompt.dataset.group !== group;
    const shown = fieldset.querySelector(`.respondent-prompt[data-group="${group}"]`);
    const randomized = fieldset.querySelector('.arm[data-arm="randomized"]') ?? fieldset; // not a split ballot's direct arm
    for (const input of randomized.querySelectorAll("input")) {
      const described = (input.getAttribute("aria-describedby") ?? "").split(" ").filter(Boolean);
      input.setAttribute("aria-describedby", [shown.id, ...described].join(" "));
    }
  }
}

/** Each split-ballot question: the respondent's arm (from the device's draws secret, or crypto.getRandomValues:
 * public, independent of every answer) before anything is answered, and show that arm only: the direct one says
 * first that the answer is sent as given. */
function assignArms() {
  for (const fieldset of form.querySelectorAll('fieldset.question[data-split="true"]')) {
    const id = fieldset.dataset.question;
    const arm = draws ? survey.armFor(id, draws) : survey.questions[id].splitBallot.assignArm();
    fieldset.dataset.arm = arm;
    for (const part of fieldset.querySelectorAll(".arm")) {
      part.hidden = part.dataset.arm !== arm;
      for (const input of part.querySelectorAll("input")) input.disabled = part.hidden;
    }
  }
}

/** The arm of every split-ballot question on the page. */
function readArms() {
  const arms = {};
  for (const fieldset of form.querySelectorAll('fieldset.question[data-arm]')) arms[fieldset.dataset.question] = fieldset.dataset.arm;
  return arms;
}

function readAnswers() {
  const answers = {};
  for (const fieldset of form.querySelectorAll("fieldset.question")) {
    const answer = readAnswer(fieldset);
    if (answer !== null) answers[fieldset.dataset.question] = answer;
  }
  return answers;
}

/** Show the items and sections skip logic shows for the answers so far (public ones decide). */
function applySkipLogic() {
  const shown = new Set(survey.shown(readAnswers()));
  for (const item of form.querySelectorAll("[data-item]")) item.hidden = !shown.has(item.dataset.item);
  for (const section of sections) section.dataset.visible = String([...section.querySelectorAll("[data-item]")].some((i) => !i.hidden));
  return shown;
}

const visibleSections = () => sections.filter((section) => section.dataset.visible === "true");

function showPage() {
  if (!paged) {
    for (const section of sections) section.hidden = section.dataset.visible !== "true";
    return;
  }
  const visible = visibleSections();
  current = Math.min(current, visible.length - 1);
  for (const section of sections) section.hidden = section !== visible[current];
  progress.hidden = false;
  progress.textContent = format(words.progress, { index: current + 1, total: visible.length });
  backButton.hidden = current === 0;
  nextButton.hidden = current === visible.length - 1;
  sendButton.hidden = current !== visible.length - 1;
  if (timing && !form.hidden) timing.timeIn(sectionOf(visible[current]));
}

function setProblem(fieldset, message) {
  const slot = fieldset.querySelector(".problem");
  slot.textContent = message;
  slot.hidden = !message;
  for (const input of fieldset.querySelectorAll("input")) {
    if (message) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  }
}

function numberProblem(fieldset, text) {
  const { min, max, constraint } = fieldset.dataset;
  let value;
  try {
    if (text.length > 40) throw new RangeError(text);
    value = parseFraction(text, "answer");
  } catch {
    return constraint;
  }
  const [low, high] = [min, max].map((x) => parseFraction(x, "grid"));
  // Between the steps is fine: the mechanism rounds to the nearest step before randomizing.
  return value.cmp(low) < 0 || value.cmp(high) > 0 ? constraint : "";
}

/** What is wrong with a shown question's answer, in the page's words ("" when nothing is). */
function problemOf(fieldset, answers, required) {
  const answer = answers[fieldset.dataset.question] ?? null;
  if (answer === null && required.has(fieldset.dataset.question)) return words.answer_this;
  if (answer !== null && fieldset.dataset.type === "number") return numberProblem(fieldset, answer);
  return "";
}

/** Check the shown questions inside `scope`; mark problems, move focus to the first. */
function validate(scope) {
  const answers = readAnswers();
  const required = new Set(survey.requiredNow(answers));
  let first = null;
  for (const fieldset of scope.querySelectorAll("fieldset.question")) {
    const message = fieldset.hidden ? "" : problemOf(fieldset, answers, required);
    setProblem(fieldset, message);
    if (message && !first) first = fieldset;
  }
  formProblem.hidden = !first;
  formProblem.textContent = first ? words.check_answers : "";
  if (first) first.querySelector("input:not(:disabled)")?.focus();
  return !first;
}

function focusSection() {
  const heading = visibleSections()[current]?.querySelector("h2");
  heading?.focus();
}

/** The full quota cell (data.full: the server's, when the page was served) the shown public answers fall in, or null. */
function fullCell() {
  const answers = readAnswers();
  const shown = new Set(survey.shown(answers));
  return (data.full ?? []).find(({ questions, cell }) => questions.every((id, i) => shown.has(id) && answers[id] === cell[i])) ?? null;
}

/** Say at once that the respondent's group is full (before the rest is asked), and take it back if the answer changes. */
function checkQuota() {
  const full = fullCell() !== null;
  if (full) {
    showProblem({ text: words.quota_full, quota: true });
    sendButton.disabled = nextButton.disabled = true;
  } else if (shownProblem?.quota) {
    problem.hidden = true;
    shownProblem = null;
    sendButton.disabled = nextButton.disabled = false;
  }
  return !full;
}

form.addEventListener("change", () => {
  applySkipLogic();
  showPage();
  if (data.full) checkQuota();
});
nextButton.addEventListener("click", () => {
  if (!validate(visibleSections()[current])) return;
  current += 1;
  if (keepingDraft) saveDraft();
  showPage();
  focusSection();
});
backButton.addEventListener("click", () => {
  current = Math.max(0, current - 1);
  if (keepingDraft) saveDraft();
  showPage();
  focusSection();
});

let shownProblem = null; // what the send problem says, to say it again in another language

function showProblem(said, { focus = true } = {}) {
  shownProblem = said;
  const { text, reload } = said;
  problem.replaceChildren(text);
  if (reload) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = words.reload;
    button.addEventListener("click", () => window.location.reload());
    problem.append(" ", button);
  }
  problem.hidden = false;
  if (!focus) return;
  // At the top of the page, where a phone shows it, and read out at once.
  problem.focus();
  problem.scrollIntoView({ block: "start" });
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  problem.hidden = true;
  applySkipLogic();
  if (data.full && !checkQuota()) return;
  if (!validate(form)) {
    if (paged) {  // go to the first section with a problem
      const invalid = visibleSections().findIndex((s) => s.querySelector('[aria-invalid="true"]'));
      if (invalid >= 0 && invalid !== current) {
        current = invalid;
        showPage();
        validate(visibleSections()[current]);
      }
    }
    return;
  }
  const answers = readAnswers();
  for (const [id, answer] of Object.entries(answers)) if (survey.questions[id].type === "number") answers[id] = Number(answer);
  const asked = JSON.stringify(answers);
  if (pending?.answers !== asked) {
    const reports = survey.randomize(answers, { arms: readArms(), memo }); // only shown questions: the same tree the server checks
    const body = { spec_hash: data.hash, idempotency_key: newIdempotencyKey(), reports };
    if (timing) body.paradata = timing.paradata();
    const held = await credential;
    if (held) body.credential = held;
    else if (token) body.token = token;
    if (data.wave) body.wave = data.wave;
    pending = { answers: asked, body };
  }
  const { body } = pending;
  sendButton.disabled = true;
  sendButton.textContent = words.sending; // at once: a send without signal would otherwise look like nothing happened
  let saved = false;
  try {
    // Known to be offline: one attempt, then the outbox, instead of four retries' seconds of waiting.
    await postResponse(window.location.origin, survey.id, body, navigator.onLine === false && outbox ? { retries: 0 } : {});
  } catch (error) {
    if (!(outbox && isUnreachable(error))) {
      const said = sendProblem(error, words);
      if (said.quota) { // the group filled while this page was open: the survey ends here, politely
        form.remove();
        dropDraft();
        draftBox.hidden = true;
      }
      sendButton.textContent = words.send; // in the words of now: the language may have switched meanwhile
      sendButton.disabled = !said.retry;
      showProblem(said);
      return;
    }
    await outbox.add(window.location.origin, survey.id, body);
    saved = true;
  }
  pending = null;
  await forgetCredential(survey.id, token);
  form.remove(); // the true answers leave the page with the form, and the draft with them
  dropDraft();
  draftBox.hidden = true;
  problem.hidden = true;
  showSent(body, saved);
});

function showSent(body, saved) {
  const { reports } = body;
  const list = document.getElementById("sent-reports");
  for (const [id, report] of Object.entries(reports)) {
    const question = survey.questions[id];
    const term = document.createElement("dt");
    term.textContent = question.textIn(data.lang);
    const value = document.createElement("dd");
    value.textContent = describe(question, report, words, data.lang);
    list.append(term, value);
  }
  document.getElementById("sent-body").textContent = JSON.stringify(body, null, 2);
  const sent = document.getElementById("sent");
  sent.querySelector("h2").textContent = saved ? words.saved_heading : words.sent;
  document.getElementById("sent-explained").textContent = saved ? words.saved_explained : words.sent_explained;
  if (saved) showOutboxStatus("saved_offline");
  sent.hidden = false;
  sent.querySelector("h2").focus();
  sent.scrollIntoView({ block: "start" });
}

function showOutboxStatus(key, text = words[key]) {
  outboxStatus.textContent = text;
  outboxStatus.dataset.word = key ?? "";
  outboxStatus.hidden = false;
}

/** Send what waits in the outbox for this survey; say what happened. */
async function deliverSaved() {
  if (!outbox || !outbox.entries().some((entry) => entry.surveyId === survey.id)) return;
  const { sent, refused, kept } = await outbox.flush({ surveyId: survey.id, retries: 1 });
  if (sent.length && !kept) {
    showOutboxStatus("outbox_sent");
    const heading = document.querySelector("#sent h2");
    if (heading && !document.getElementById("sent").hidden) {
      heading.textContent = words.sent;
      document.getElementById("sent-explained").textContent = words.sent_explained;
    }
  } else if (refused.length) {
    showOutboxStatus(null, sendProblem(refused[0], words).text);
  }
}

// Answers saved on an earlier visit: this respondent has answered; send them rather than ask again.
if (outbox?.entries().some((entry) => entry.surveyId === survey.id)) {
  form.remove();
  showOutboxStatus("outbox_waiting");
}
// Switching language (language.js) keeps the answers given so far, in this page's memory only.
async function switchLanguage(link) {
  const { page: next, data: nextData } = await fetchPage(invited(link.href, token));
  if (nextData.hash !== data.hash) throw new Error("another version"); // a new version: its own page
  next.getElementById("coin-form")?.remove();
  if (order) applyOrder(next); // the same order as this page's, so the two match element by element
  layWordsOver(document.querySelector("main"), next.querySelector("main"));
  clearLanguageLinks(); // the other page's links were written with the invitation
  document.documentElement.lang = next.documentElement.lang;
  document.documentElement.dir = next.documentElement.dir;
  document.title = next.title;
  data.lang = nextData.lang;
  words = nextData.messages;
  for (const other of document.querySelectorAll(".languages a")) {
    if (other.lang === data.lang) other.setAttribute("aria-current", "true");
    else other.removeAttribute("aria-current");
  }
  history.replaceState(null, "", `${window.location.pathname}?lang=${encodeURIComponent(data.lang)}`);
  // What the script wrote in the old words: said again in the new ones.
  showPage();
  const answers = readAnswers();
  const required = new Set(survey.requiredNow(answers));
  for (const fieldset of form.querySelectorAll("fieldset.question")) {
    if (!fieldset.querySelector(".problem").hidden) setProblem(fieldset, problemOf(fieldset, answers, required));
  }
  if (!formProblem.hidden) formProblem.textContent = words.check_answers;
  if (!problem.hidden && shownProblem) showProblem(shownProblem, { focus: false });
  if (!outboxStatus.hidden && outboxStatus.dataset.word) showOutboxStatus(outboxStatus.dataset.word);
  if (!draftBox.hidden && draftStatus.dataset.word) showDraftStatus(draftStatus.dataset.word);
}

for (const link of document.querySelectorAll(".languages a")) {
  link.addEventListener("click", async (event) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return; // another tab
    event.preventDefault();
    // Nothing on the page to keep: the link followed, with the invitation.
    if (!form.isConnected || link.lang === data.lang) return window.location.assign(invited(link.href, token));
    try {
      await switchLanguage(link);
    } catch (error) {
      if (error instanceof Offline) showProblem({ text: `${words.offline}.` });
      else window.location.assign(invited(link.href, token)); // another version, or not the survey page: as the link gives it
    }
  });
}

window.addEventListener("online", deliverSaved);
deliverSaved();

assignArms();
assignGroups();
if (form.isConnected) resumeDraft();
applySkipLogic();
showPage();
if (data.full) checkQuota();
// The clock starts with the questions (after the consent step, if any; the page's own words before them are not timed)
if (timing && form.isConnected && !form.hidden && timing.section === null) timing.timeIn(sectionOf(form.querySelector("section.section")));
