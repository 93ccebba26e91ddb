// The respondent page: randomize in the browser with deniable.js, send only the reports,
// then show exactly what was sent. True answers are never stored anywhere (no storage,
// no cookies, no URL) and the form is cleared as soon as the reports are drawn.
import { Survey, newIdempotencyKey, postResponse } from "/js/deniable.js";

const data = JSON.parse(document.getElementById("survey-data").textContent);
const survey = Survey.fromSpec(data.spec);
const form = document.getElementById("survey-form");
const coinForm = document.getElementById("coin-form");
const problem = document.getElementById("send-problem");
const token = new URLSearchParams(window.location.search).get("t");
// Keep the invitation token out of the address bar, the history and any later page.
if (token) history.replaceState(null, "", window.location.pathname);

coinForm.remove();
form.hidden = false;
// One key per page load: pressing "send" twice, or a retry after a lost answer, stores one response.
const idempotencyKey = newIdempotencyKey();

function readAnswer(fieldset) {
  const inputs = [...fieldset.querySelectorAll("input")];
  switch (fieldset.dataset.type) {
    case "multi_select":
      return inputs.filter((i) => i.checked).map((i) => i.value);
    case "number": {
      const text = inputs[0].value.trim();
      return text === "" ? null : Number(text);
    }
    default:
      return inputs.find((i) => i.checked)?.value ?? null;
  }
}

function showProblem(fieldset, message) {
  const slot = fieldset.querySelector(".problem");
  slot.textContent = message;
  slot.hidden = !message;
}

function describe(report) {
  if (Array.isArray(report)) return report.length ? report.join(", ") : "(none selected)";
  return String(report);
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  problem.hidden = true;
  const answers = {};
  let firstMissing = null;
  for (const fieldset of form.querySelectorAll("fieldset.question")) {
    const answer = readAnswer(fieldset);
    const missing = answer === null && fieldset.hasAttribute("data-required");
    showProblem(fieldset, missing ? "Please answer this question." : "");
    if (missing && !firstMissing) firstMissing = fieldset;
    if (answer !== null) answers[fieldset.dataset.question] = answer;
  }
  if (firstMissing) {
    firstMissing.querySelector("input")?.focus();
    return;
  }
  const reports = survey.randomize(answers);
  form.reset(); // the true answers leave the page as soon as they are randomized
  const body = { spec_hash: data.hash, idempotency_key: idempotencyKey, reports };
  if (token) body.token = token;
  const button = form.querySelector("button");
  button.disabled = true;
  try {
    await postResponse(window.location.origin, survey.id, body);
  } catch (error) {
    button.disabled = false;
    problem.textContent = error.status === 409 ? "This invitation has already been used to answer."
      : error.status === 410 ? "This survey is closed." : `Your answers could not be sent: ${error.message}`;
    problem.hidden = false;
    return;
  }
  form.remove();
  const list = document.getElementById("sent-reports");
  for (const [id, report] of Object.entries(reports)) {
    const term = document.createElement("dt");
    term.textContent = survey.questions[id].text;
    const value = document.createElement("dd");
    value.textContent = describe(report);
    list.append(term, value);
  }
  document.getElementById("sent-body").textContent = JSON.stringify(body, null, 2);
  const sent = document.getElementById("sent");
  sent.hidden = false;
  sent.querySelector("h2").focus();
  sent.scrollIntoView({ block: "start" });
});
