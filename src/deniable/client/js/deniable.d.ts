// Type declarations for deniable.js, written by hand beside it (a test type-checks a consumer against
// them with tsc --strict, and another checks that every runtime export is declared here).

// ---------------------------------------------------------------- values

/** An answer (or a report): "yes"/"no" or an option's value, a number on a grid, or the options ticked. */
export type Answer = string | number | string[];
/** A report that carries a public marker: the group of a cheating-detection or lie-detector question, the
 * arm of a split ballot ({arm: "direct", report: "yes"}; {arm: "randomized", group: "a", report: "no"}). */
export interface MarkedReport {
  arm?: Arm;
  group?: string;
  report: string;
}
/** Answers by question id; a question left out (or null) is unanswered. A question the respondent randomizes
 * in groups takes the group and the choice made ({group, report}). */
export type Answers = Record<string, Answer | MarkedReport | null | undefined>;
/** Reports by question id: exactly what leaves the device. */
export type Reports = Record<string, Answer | MarkedReport>;
/** The arm of a split ballot. */
export type Arm = "direct" | "randomized";
/** How `Survey.randomize` draws: its source of randomness, and the arm each split-ballot question was shown in. */
export interface RandomizeOptions {
  source?: RandomSource;
  arms?: Record<string, Arm>;
  /** Required by a repeated survey (refused by others): the device's panel secret. */
  memo?: Memo | null;
}
/** How `Survey.simulate` draws: its source, and in a repeated survey one memo per simulated person. */
export interface SimulateOptions {
  source?: RandomSource;
  memo?: Memo | null;
}
/** Text in one language, or by language code ({en: "...", es: "..."}). */
export type LocalizedText = string | Record<string, string>;
/** A survey spec as the server serves it (GET /api/v1/surveys/{id} → .spec), or as written in YAML/JSON. */
export type SurveySpec = Record<string, unknown>;

/** Where randomness comes from; the default draws from crypto.getRandomValues. Tests pass their own. */
export interface RandomSource {
  randomBelow(n: bigint): bigint;
}

// ---------------------------------------------------------------- exact arithmetic

export const EXP_GRID_BITS: bigint;
export const MAX_GRID_POINTS: number;
export const MAX_MULTI_SELECT_OPTIONS: number;

/** An exact rational n/d with d > 0, always reduced. */
export class Fraction {
  constructor(n: bigint | number, d?: bigint | number);
  readonly n: bigint;
  readonly d: bigint;
  add(other: Fraction): Fraction;
  sub(other: Fraction): Fraction;
  mul(other: Fraction): Fraction;
  div(other: Fraction): Fraction;
  pow(k: number | bigint): Fraction;
  cmp(other: Fraction): -1 | 0 | 1;
  floor(): bigint;
  isZero(): boolean;
  toString(): string;
  toPair(): [bigint, bigint];
  toNumber(): number;
}

/** ε = ln(exp_epsilon) rounded up, from an exact e^ε (Infinity for null: no bound). */
export function epsilonOf(expEpsilon: Fraction | null): number;
/** Read a number or a fraction written as a number, "1/4" or "0.25". Throws SpecError naming `field`. */
export function parseFraction(value: number | bigint | string, field: string): Fraction;
/** The largest integer r with r ** degree <= value. */
export function integerRoot(value: bigint | number, degree: bigint | number): bigint;

/** A privacy budget as written in a spec: a rational or ln(c). */
export class EpsilonRequest {
  constructor(fields: { value?: Fraction | null; lnOf?: Fraction | null });
  readonly value: Fraction | null;
  readonly lnOf: Fraction | null;
  static parse(raw: number | string, field: string, ceiling?: number | null): EpsilonRequest;
  toNumber(): number;
  canonical(): number | string;
  /** Whether a total with exact e^ε `expEpsilon` (null: infinite) and ε `spent` is within this budget. */
  allows(expEpsilon: () => Fraction | null, spent: number): boolean;
  /** A rational L <= e^(epsilon/divisor) on the 2^-32 grid. */
  expLowerBound(divisor?: number): Fraction;
}

/** A uniform BigInt in [0, n) from crypto.getRandomValues (rejection sampling, no modulo bias). */
export function randomBelow(n: bigint | number): bigint;

// ---------------------------------------------------------------- mechanisms

export class SpecError extends Error {
  constructor(message: string);
}

/** An answer the client refuses before randomizing anything; `question` names it, `allowed` says what it takes. */
export class AnswerError extends RangeError {
  constructor(question: string, reason: string, allowed: string);
  readonly question: string;
  readonly reason: string;
  readonly allowed: string;
}

/** What every mechanism offers (not a runtime export: a type for the classes below). */
declare abstract class Mechanism {
  readonly design: string;
  readonly params: Record<string, unknown>;
  /** ε computed from the exact channel (Infinity when a report can reveal the answer). */
  readonly epsilon: number;
  readonly isPrivate: boolean;
  /** Exact e^ε, or null when unbounded. */
  readonly expEpsilon: Fraction | null;
  /** True when the respondent randomizes (crosswise, triangular, a natural randomizer): the page takes their
   * choice, already a report, and `randomize` simulates a respondent. */
  readonly respondentRandomizes: boolean;
  readonly answers: Answer[];
  readonly reports: Answer[];
  /** The full matrix Q[r][a] in the order of reports and answers. */
  channel(): Fraction[][];
  /** Exact P(report | answer) as [numerator, denominator]. */
  probability(report: Answer, answer: Answer): [bigint, bigint];
  validateAnswer(answer: Answer): Answer;
  validateReport(report: Answer): Answer;
  randomize(answer: Answer, source?: RandomSource): Answer;
  /** Where `answer` sits in the answer alphabet (an index, a grid index, a multi-select bitmask). */
  answerPosition(answer: Answer): number;
  /** In a repeated survey's composite channel: the design's own (permanent) mechanism, and the layer on top. */
  readonly permanent?: Mechanism;
  readonly instant?: InstantLayer;
}
export type { Mechanism };

export class ChannelMechanism extends Mechanism {
  constructor(design: string, params: Record<string, unknown>, answers: Answer[], reports: Answer[], columns: Fraction[][]);
}

export class SymmetricMechanism extends ChannelMechanism {
  constructor(design: string, params: Record<string, unknown>, options: string[], keep: Fraction, other: Fraction);
  readonly keep: Fraction;
  readonly other: Fraction;
}

export class OrdinalMechanism extends ChannelMechanism {
  constructor(design: string, params: Record<string, unknown>, options: string[], base: Fraction);
  readonly base: Fraction;
}

export class UnaryMechanism extends Mechanism {
  constructor(design: string, params: Record<string, unknown>, options: string[], keepOne: Fraction, flipZero: Fraction);
  readonly options: string[];
  readonly keepOne: Fraction;
  readonly flipZero: Fraction;
  /** [[P(0|0), P(0|1)], [P(1|0), P(1|1)]] shared by every option. */
  bitChannel(): Fraction[][];
  randomize(answer: string[], source?: RandomSource): string[];
}

export class LaplaceMechanism extends Mechanism {
  constructor(design: string, params: Record<string, unknown>, minimum: Fraction, maximum: Fraction, step: Fraction,
              alpha: Fraction | null);
  readonly minimum: Fraction;
  readonly maximum: Fraction;
  readonly step: Fraction;
  /** N: the grid has N + 1 points. */
  readonly points: number;
  /** null for a public number (no noise). */
  readonly alpha: Fraction | null;
  readonly reportRange: [number, number];
  answerIndex(answer: number | string): number;
  reportIndex(report: number): number;
  randomize(answer: number | string, source?: RandomSource): number;
}

/** Cheating detection and the stochastic lie detector: reports carry the respondent's public group. */
export class GroupedMechanism extends Mechanism {
  readonly groups: string[];
  /** The analysis channel's columns: each latent class (e.g. "cheater") and P(report | class). */
  readonly latentClasses: [string, Fraction[]][];
  /** The group a new respondent is shown: uniform over the groups, from crypto.getRandomValues. */
  assignGroup(source?: RandomSource): string;
  /** The instruction a respondent of `group` follows. */
  instruction(group: string): string | Record<string, string>;
}

export const YES_NO: ["yes", "no"];
/** What a respondent chooses in the crosswise and the triangular design. */
export const CROSSWISE_REPORTS: ["same", "different"];
export const TRIANGULAR_REPORTS: ["no_to_both", "other"];
/** Each design: the question types it fits and the parameters it takes. */
export const DESIGNS: Record<string, [string[], string[]]>;
/** The mechanism a question's privacy field asks for. */
export function buildMechanism(type: string, privacy: "none" | Record<string, unknown>, where: string,
                               options?: string[] | null, grid?: [Fraction, Fraction, Fraction] | null,
                               text?: ((value: unknown, where: string) => unknown) | null): Mechanism;

/** Below this ε a spec is refused: the answer would carry nothing. */
export const MIN_EPSILON: number;
/** Above this ε (ln 49) a question is flagged: a 2% prior can pass 50% after one report. */
export const WEAK_EPSILON: number;
/** The largest posterior an observer can reach from `prior` after one report. */
export function posteriorBound(prior: number, epsilon: number): number;
/** Plain-language privacy note for one question. */
/** Page words of one language (import from "deniable/words/fr" and the like): the statements' templates. */
export type PageWords = Readonly<Record<string, string>>;
export function privacyStatement(epsilon: number, prior?: number, words?: PageWords): string;
/** The note of a one-sided randomized design (ε = ∞). */
export const ONE_SIDED_STATEMENT: string;
/** The note of a design in which the respondent randomizes: the device never sees the answer, and the
 * assumption the guarantee rests on, in words. */
export function respondentStatement(epsilon: number, design: "crosswise" | "triangular" | "forced_response" | "cheating_detection" | "stochastic_lie_detector", prior?: number, words?: PageWords): string;
/** What a split ballot means for the respondent (said after the question's own statement). */
export function splitBallotStatement(direct: Fraction, words?: PageWords): string;

// ---------------------------------------------------------------- skip logic

export class ExpressionError extends Error {
  constructor(message: string);
}
export const MAX_EXPRESSION_LENGTH: number;
/** A parsed skip-logic expression (the same tree as the Python twin's). */
export type Expression =
  | { op: "and" | "or"; args: Expression[] }
  | { op: "not"; arg: Expression }
  | { op: "=" | "!=" | "<" | "<=" | ">" | ">=" | "selected"; question: string; value: { text?: string; number?: string } };
/** The canonical spelling of a number literal in an expression. */
export function canonicalNumber(literal: string): string;
export function parseExpression(text: string): Expression;
/** The canonical spelling of a tree. */
export function expressionText(tree: Expression): string;
export function evaluateExpression(tree: Expression, answers: Answers): boolean;

// ---------------------------------------------------------------- surveys

export const QUESTION_TYPES: ["yes_no", "choice", "ordinal", "multi_select", "number"];
export const MAX_ITEMS: number;
export const MAX_OPTIONS: number;
export const MAX_SECTIONS: number;
export function isRightToLeft(language: string | null | undefined): boolean;
/** `text` in `language`, else in the default language. */
export function localize(text: LocalizedText | null | undefined, language: string | null, defaultLanguage: string | null): string | null;

interface Languages {
  readonly codes: string[];
  readonly default: string | null;
}

declare abstract class Item {
  readonly id: string;
  readonly type: string;
  readonly relevant: Expression | null;
  readonly section: Section | null;
  readonly isPrivate: boolean;
  /** The text in the default language (`textIn` for another). */
  readonly text: string;
  textIn(language: string | null): string;
  hintIn(language: string | null): string | null;
}

/** Text shown between questions; never answered, never reported. */
export class Note extends Item {
  constructor(spec: Record<string, unknown>, position: number, languages: Languages);
  readonly type: "note";
}

export class Question extends Item {
  constructor(spec: Record<string, unknown>, position: number, languages?: Languages);
  readonly type: "yes_no" | "choice" | "ordinal" | "multi_select" | "number";
  readonly required: boolean | Expression;
  readonly options: string[] | null;
  /** Whether its options are shown in an order drawn on the device (choice and multi_select only). */
  readonly randomize: boolean;
  /** [min, max, step] of a number question, else null. */
  readonly grid: [Fraction, Fraction, Fraction] | null;
  /** The channel a report goes through: in a repeated survey the composite, instantaneous ∘ permanent. */
  readonly mechanism: Mechanism;
  /** ε of one report (in a repeated survey, one wave's: ε₁). */
  readonly epsilon: number;
  /** The design as the spec gives it (in a repeated survey, the permanent layer). */
  readonly permanent: Mechanism;
  /** ε of every report of every wave together, for an unchanged answer (ε∞). */
  readonly epsilonAllWaves: number;
  /** What the question accepts, in words. */
  describeAnswers(): string;
  optionLabel(value: string, language: string | null): string;
  constraintMessageIn(language: string | null): string | null;
  privacyStatement(prior?: number, words?: PageWords): string;
  /** The question's split ballot (a share asked directly), or null. */
  readonly splitBallot: SplitBallot | null;
  /** What a report of this question may be: the mechanism's reports, or with a split ballot both arms'. */
  readonly reportSpace: Mechanism | SplitBallot;
  /** The canonical form of a report of this question; throws RangeError when it is not one. */
  validateReport(report: unknown): Answer | MarkedReport;
}

export const ARMS: ["direct", "randomized"];
/** Split ballot: `direct` of respondents answer directly (told so first); the rest through the design. */
/** The order one respondent is asked in, drawn on the device and never sent: every section id in the order shown,
 * per randomized section its item ids, per shuffled question its option values. */
export interface Order {
  sections: Array<string | null>;
  items: Record<string, string[]>;
  options: Record<string, string[]>;
}
export function drawOrder(survey: Survey, source?: RandomSource): Order;

/** A recruitment panel's completion: the survey's code (no answer, no identity) and the link back to the panel. */
export class Completion {
  constructor(code?: string | null, url?: string | null);
  static read(spec: unknown): Completion | null;
  readonly code: string | null;
  readonly url: string | null;
  /** The URL with the code put in where it names {code}. */
  readonly link: string | null;
}

/** When a survey takes answers (`opens`, `closes` in its spec); either end may be null. */
export class Schedule {
  constructor(opens?: Date | null, closes?: Date | null);
  static read(opens: unknown, closes: unknown): Schedule;
  readonly opens: Date | null;
  readonly closes: Date | null;
  /** "not open" before `opens`, "closed" from `closes` on, else "open". */
  state(now?: Date): "open" | "not open" | "closed";
}
/** An instant written with its time zone ("2026-12-01T09:00:00+01:00", "…Z"); throws SpecError naming `where`. */
export function parseInstant(value: unknown, where: string): Date;

export class SplitBallot {
  constructor(spec: Record<string, unknown>, where: string, questionType: string, mechanism: Mechanism);
  readonly direct: Fraction;
  readonly answers: string[];
  readonly mechanism: Mechanism;
  /** Both arms' reports: the direct answers, then the design's reports, each with its arm. */
  readonly reports: MarkedReport[];
  /** The arm a new respondent is shown, drawn before the question is (crypto.getRandomValues). */
  assignArm(source?: RandomSource): Arm;
  validateReport(report: unknown): MarkedReport;
  toDict(): { direct: string };
  static wrap(arm: Arm, report: Answer | MarkedReport): MarkedReport;
  static unwrap(report: MarkedReport): [Arm, Answer | MarkedReport];
}

export class Section {
  constructor(spec: Record<string, unknown>, position: number, languages: Languages, firstPosition: number);
  readonly id: string;
  readonly items: Array<Question | Note>;
  readonly relevant: Expression | null;
  /** Whether its items are shown in an order drawn on the device. */
  readonly randomize: boolean;
  titleIn(language: string | null): string;
  introIn(language: string | null): string | null;
}

/** The error of a skip-logic rule that reads a private question. */
export function leakMessage(where: string, itemId: string, privateId: string): string;

export class Survey {
  constructor(spec: SurveySpec);
  /** Build and validate a spec (throws SpecError naming the field). */
  static fromSpec(spec: SurveySpec): Survey;
  readonly id: string;
  readonly version: string | null;
  readonly layout: "auto" | "paged" | "single";
  readonly sections: Section[];
  /** The ids of the sections that change places at random (randomize_sections), in the survey's order. */
  readonly shuffledSections: string[];
  /** Whether some sections, questions or options are shown in an order drawn on the device. */
  readonly hasRandomOrder: boolean;
  readonly items: Array<Question | Note>;
  readonly questions: Record<string, Question>;
  readonly languages: Languages;
  readonly title: string;
  readonly description: string | null;
  readonly defaultLanguage: string | null;
  readonly privateQuestions: Question[];
  readonly publicQuestions: Question[];
  /** Total ε per respondent over the private questions (over all waves of a repeated survey). */
  readonly epsilon: number;
  /** Total ε of one wave's reports (equal to `epsilon` unless the survey is repeated). */
  readonly epsilonPerWave: number;
  /** `repeated: true` or `{instant_epsilon}`; null for a survey asked once. */
  readonly repeated: Repeated | null;
  /** What a respondent agrees to before the first question, in a language (null: no consent asked). */
  consentIn(language?: string | null): string | null;
  /** When it takes answers (`opens`, `closes`). */
  readonly schedule: Schedule;
  /** What a respondent is shown when done (a panel's completion code and link); null for none. */
  readonly completion: Completion | null;
  /** The split-ballot arm this device's respondent is shown in every wave. */
  armFor(questionId: string, memo: Memo): Arm;
  /** The group (cheating detection, lie detector) this device's respondent follows in every wave. */
  groupFor(questionId: string, memo: Memo): string;
  /** The exact e^ε of the whole survey, null when infinite. */
  readonly expEpsilon: Fraction | null;
  /** The survey's budget (max_epsilon), or null. */
  readonly maxEpsilon: EpsilonRequest | null;
  titleIn(language: string | null): string;
  descriptionIn(language: string | null): string | null;
  /** Ids of the items skip logic shows for these answers. */
  shown(answers: Answers): string[];
  /** Ids of the questions that must be answered now. */
  requiredNow(answers: Answers, shown?: string[]): string[];
  /** Randomize the shown, answered questions on this device; throws AnswerError for an answer it refuses. A
   * question the respondent randomizes takes their choice (a report) as it is. A split-ballot question needs
   * the arm its respondent was shown (`options.arms`); a direct answer is sent as given. */
  randomize(answers: Answers, options?: RandomSource | RandomizeOptions): Reports;
  /** What respondents with these true answers would send (demos, tests): questions the respondent randomizes
   * are drawn through their channel. */
  simulate(answers: Answers, options?: RandomSource | SimulateOptions): Reports;
}

// ---------------------------------------------------------------- panels

/** A memo that cannot serve as one; `field` is "memo". */
export class MemoError extends Error {
  constructor(message: string);
  readonly field: "memo";
}
/** Bytes of a memo secret (stored as 64 hex digits). */
export const SECRET_BYTES: number;
/** What a memo stream is keyed on: survey, question, purpose ("report", "arm", "group") and a position. */
export function memoMessage(surveyId: string, questionId: string, purpose: string, position?: number | bigint | null): Uint8Array;
export function sha256(bytes: Uint8Array): Uint8Array;
export function hmacSha256(key: Uint8Array, message: Uint8Array): Uint8Array;
/** Words of HMAC-SHA256(secret, message ‖ counter), drawn exactly: the same draws as the Python client. */
export class MemoStream implements RandomSource {
  constructor(secret: Uint8Array, message: Uint8Array);
  word(): number;
  below(limit: number): number;
  randomBelow(n: bigint): bigint;
}
/** The device's panel secret, kept in localStorage (or any getItem/setItem storage); never an answer. */
export class Memo {
  constructor(storage: { getItem(key: string): string | null; setItem(key: string, value: string): void }, key?: string);
  /** A memo held in memory: 32 bytes, or 64 hex digits. */
  static fromSecret(secret: Uint8Array | string): Memo;
  stream(surveyId: string, questionId: string, purpose: string, position?: number | null): MemoStream;
}
/** The share of reports the default instantaneous layer replaces by a uniform one (1/10). */
export const DEFAULT_REFRESH: Fraction;
/** A survey's `repeated` field. */
export class Repeated {
  constructor(instantEpsilon?: EpsilonRequest | null);
  static parse(raw: unknown, where?: string): Repeated | null;
  readonly instantEpsilon: EpsilonRequest | null;
  canonical(): true | { instant_epsilon: string | number };
  layer(mechanism: Mechanism): InstantLayer;
}
/** k-ary randomized response over a block of reports (or each option's bit), fresh in every wave. */
export class InstantLayer {
  constructor(keep: Fraction, other: Fraction, size: number, perBit?: boolean);
  readonly keep: Fraction;
  readonly other: Fraction;
  readonly size: number;
  readonly perBit: boolean;
  readonly expEpsilon: Fraction;
  apply(mechanism: Mechanism, report: Answer | MarkedReport, source: RandomSource): Answer | MarkedReport;
  transform(probability: Fraction, blockMass?: Fraction): Fraction;
}
/** The composite channel instantaneous ∘ permanent, shaped like the permanent mechanism. */
export function memoized(mechanism: Mechanism, layer: InstantLayer): Mechanism;
/** What a repeated survey's memo means for the respondent (ε over all waves). */
export function repeatedStatement(epsilonAll: number, words?: PageWords): string;

// ---------------------------------------------------------------- sending reports

/** What an answer to a sent response means to a client (STATUS_TABLE's kinds; "unreachable": no answer). */
export type StatusKind = "stored" | "refused" | "survey_not_found" | "stale_spec" | "retry_later" | "token_used"
  | "no_wave_open" | "closed" | "wave_closed" | "unreachable";
/** One row of the status table shared with the Python client (client/statuses.py). */
export interface StatusRow { status: number; field: string | null; kind: StatusKind; retry: boolean; meaning: string }
export const STATUS_TABLE: readonly StatusRow[];
/** The kind of an answer with this status and error field, and whether to send the response again later. */
export function classify(status: number, field?: string | null): { kind: StatusKind; retry: boolean };
/** Whether a response that got this answer must be kept and sent again (status null: no answer at all). */
export function isRetryable(status: number | null, field?: string | null): boolean;
/** A Retry-After header's delay in seconds (a number or an HTTP date), or null. */
export function retryAfterSeconds(value: string | null | undefined): number | null;

/** A response the server refused, or could not be reached after retries (status null). */
export class SubmitError extends Error {
  constructor(message: string, details?: { status?: number | null; field?: string | null; retryAfter?: number | null });
  readonly status: number | null;
  readonly field: string | null;
  /** The server's Retry-After, in seconds, when it gave one. */
  readonly retryAfter: number | null;
  readonly kind: StatusKind;
  /** Whether sending the same body again later can succeed: keep it until then. */
  readonly retryable: boolean;
}
/** 404: no survey with this id. */
export class SurveyNotFound extends SubmitError {}
/** 404 on spec_hash: the spec it was randomized under is no version of this survey. */
export class StaleSpec extends SurveyNotFound {}
/** 410: the survey no longer accepts responses. */
export class SurveyClosed extends SubmitError {}
/** 410 on wave: the wave this response was for has closed. */
export class WaveClosed extends SurveyClosed {}
/** 409 on token: this respondent token has answered already. */
export class TokenAlreadyUsed extends SubmitError {}
/** 409 on wave: the survey is repeated and no wave is open now. */
export class NoWaveOpen extends SubmitError {}
/** 409 on quota: the respondent's group (a quota cell of public answers) is full; the response was not stored. */
export class QuotaFull extends SubmitError {}
/** 4xx: a report or field is invalid; `field` names it. */
export class ResponseRejected extends SubmitError {}
/** 408, 429, 5xx, 507: the server could not take it now; send the same body again later. */
export class RetryLater extends SubmitError {}

/** A random idempotency key: a retry with the same key is stored once. */
export function newIdempotencyKey(): string;

/** How requests are sent and retried (no answer, and STATUS_TABLE's retry rows: 408/425/429/5xx/507, with
 * exponential backoff or the server's Retry-After, whichever is longer, up to maxWaitMs). */
export interface SendOptions {
  fetch?: typeof globalThis.fetch;
  retries?: number;
  backoffMs?: number;
  maxWaitMs?: number;
}

/** The body of one response: only randomized reports. */
export interface ResponseBody {
  spec_hash: string;
  idempotency_key: string;
  reports: Reports;
  token?: string;
  /** A blind-signed credential (obtainCredential), instead of the token. */
  credential?: Credential;
  /** The wave of a repeated survey the response belongs to (as served with the spec). */
  wave?: string;
}

/** The server's acknowledgement of a stored response. */
export type Acknowledgement = Record<string, unknown>;

/** Fetch a survey's served spec and build it. */
export function fetchSurvey(baseUrl: string, surveyId: string, options?: SendOptions):
  Promise<{ survey: Survey; hash: string; payload: Record<string, unknown> }>;
/** POST one already-randomized response, retrying transient failures with the same idempotency key. */
export function postResponse(baseUrl: string, surveyId: string, body: ResponseBody, options?: SendOptions):
  Promise<Acknowledgement>;
/** Fetch the spec, randomize `answers` on this device, and send only the reports; with an `outbox`, a send
 * that gets no final answer keeps the randomized body there (queued: true, acknowledgement: null). */
export function submit(baseUrl: string, surveyId: string, answers: Answers,
                       options?: SendOptions & { token?: string | null; outbox?: Outbox | null; memo?: Memo | null;
                                                  arms?: Record<string, "direct" | "randomized"> | null }):
  Promise<{ acknowledgement: Acknowledgement | null; reports: Reports; queued: boolean }>;

/** A blind-signed credential: sent with a response instead of the invitation token it was exchanged for. */
export interface Credential { key: string; serial: string; signature: string }
/** Exchange an invitation token for a blind-signed credential; null from a server that issues none. With a
 * `storage`, the request and then the credential are kept there, so a reload asks nothing twice. */
export function obtainCredential(baseUrl: string, surveyId: string, token: string,
                                 options?: SendOptions & { storage?: OutboxStorage | null }): Promise<Credential | null>;
/** The `storage` key `obtainCredential` keeps a survey's credential under (the token's digest, not the token). */
export function credentialSlot(surveyId: string, token: string): Promise<string>;

/** True for a send that never got an answer from the server. */
export function isUnreachable(error: unknown): boolean;

/** What an outbox keeps its entries in: localStorage, or anything with the same three methods. */
export interface OutboxStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** An in-memory OutboxStorage (Node, tests). */
export class MemoryStorage implements OutboxStorage {
  constructor();
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export interface OutboxEntry {
  baseUrl: string;
  surveyId: string;
  body: ResponseBody;
}

/** Randomized bodies (never true answers) waiting for a connection; each is sent with its own idempotency key. */
export class Outbox {
  /** Refuses (TypeError) a storage without getItem, setItem and removeItem. */
  constructor(options?: OutboxStorage | { storage?: OutboxStorage; key?: string });
  readonly storage: OutboxStorage;
  readonly key: string;
  entries(): OutboxEntry[];
  add(baseUrl: string, surveyId: string, body: ResponseBody): Promise<void>;
  /** Send what is kept (or one survey's); delivered and refused entries leave, unreachable ones stay. */
  flush(options?: SendOptions & { surveyId?: string | null }):
    Promise<{ sent: Acknowledgement[]; refused: SubmitError[]; kept: number }>;
}

/** A blind signature that does not verify, or a key or message it cannot be made with (`field` names which). */
export class BlindSignatureError extends Error {
  readonly field: string;
}

/** An RSA blind-signature signer's public key (RFC 9474): modulus and exponent. */
export class PublicKey {
  constructor(n: bigint | string | number, e: bigint | string | number);
  readonly n: bigint;
  readonly e: bigint;
  /** The modulus's length in bytes. */
  readonly length: number;
}

/** The message as signed: 32 random bytes, then the message (RSABSSA-SHA384-PSS-Randomized). */
export function prepareBlind(message: Uint8Array): Uint8Array;
/** The blinded message for the signer, and the inverse that unblinds its answer. */
export function blind(key: PublicKey, message: Uint8Array, options?: { salt?: Uint8Array | null; inverse?: bigint | null }):
  Promise<{ blinded: Uint8Array; inverse: bigint }>;
/** The RSA-PSS signature on the prepared message, unblinded and verified. */
export function finalizeBlind(key: PublicKey, message: Uint8Array, blindSignature: Uint8Array, inverse: bigint): Promise<Uint8Array>;
/** Whether `signature` is the key's RSA-PSS signature (SHA-384, 48-byte salt) on `message`. */
export function verifyBlind(key: PublicKey, message: Uint8Array, signature: Uint8Array): Promise<boolean>;
