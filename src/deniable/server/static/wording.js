// What the respondent page says in the respondent's words: a report as sent, and why a send did not go through.
import { SplitBallot, parseFraction } from "/js/deniable.js";

/** `template` with each {key} replaced by `values[key]`. */
export const format = (template, values) => template.replace(/\{(\w+)\}/g, (_, key) => values[key]);

/** A report as the respondent reads it (`words`: the page's words, `lang`: its language). */
export function describe(question, report, words, lang) {
  // A yes/no answer without a label of its own is said in the page's words (as are the reports of a design the
  // respondent randomizes).
  const label = (value) => (question.type === "yes_no" && !(value in question.optionLabels) ? words[value] : question.optionLabel(value, lang));
  if (question.splitBallot) {
    const [arm, inner] = SplitBallot.unwrap(report);
    if (arm === "direct") return format(words.direct_report, { report: label(inner) });
    report = inner;
  }
  if (report !== null && typeof report === "object" && !Array.isArray(report)) {
    return format(words.group_report, { report: label(report.report), group: report.group });
  }
  if (Array.isArray(report)) return report.length ? report.map(label).join(", ") : words.none_selected;
  if (question.type !== "number") return label(report);
  const [low, high] = question.grid;
  const value = parseFraction(report, "report");
  if (value.cmp(low) >= 0 && value.cmp(high) <= 0) return String(report);
  // Noise may carry a number past the ends of the question's range: say why, or it reads as a mistake.
  const [min, max] = [low, high].map((x) => String(x.toNumber()));
  return `${report} (${format(words.outside_range, { min, max })})`;
}

/** The refusal or failure in words for the respondent (never a field name or a status code). */
export function sendProblem(error, words) {
  if (error.field === "quota") return { text: words.quota_full, quota: true };
  if (error.field === "wave") return { text: error.status === 409 ? words.no_wave_message : words.wave_closed, reload: error.status === 410 };
  if (error.status === 409) return { text: words.already_used };
  if (error.status === 410) return { text: words.closed };
  if (error.field === "token") return { text: words.invalid_invitation };
  if (error.field === "spec_hash") return { text: words.changed, reload: true };
  if (error.status === null || error.status === undefined) return { text: `${words.offline}. ${words.answers_kept}`, retry: true };
  if (error.status >= 500) return { text: `${words.server_trouble} ${words.answers_kept}`, retry: true };
  const reason = String(error.message).replace(/^[\w.\[\]]+: /, "");
  return { text: `${format(words.not_sent, { reason })} ${words.answers_kept}`, retry: true };
}
