// deniable.js: randomize survey answers on the respondent's device (browser or Node >= 18).
//
// The twin of the Python package deniable.client: the same spec builds the same exact channel
// Q[r][a] = P(report r | answer a), here with BigInt fractions. Reports are drawn with
// crypto.getRandomValues and integer thresholds; no floating point decides a probability.
// epsilon is computed from the channel. Shared test vectors (tests/vectors/) keep the twins equal.
// No dependencies.
//
// The modules under src/ are named like their Python twins; this file re-exports the public API.

export { SpecError, AnswerError } from "./src/errors.js";
export { EXP_GRID_BITS, MAX_GRID_POINTS, MAX_MULTI_SELECT_OPTIONS, Fraction, epsilonOf, parseFraction, integerRoot, EpsilonRequest } from "./src/exact.js";
export { randomBelow } from "./src/randomness.js";
export { YES_NO, ChannelMechanism, SymmetricMechanism, OrdinalMechanism, UnaryMechanism, LaplaceMechanism } from "./src/mechanisms.js";
export { GroupedMechanism } from "./src/compliance.js";
export { CROSSWISE_REPORTS, TRIANGULAR_REPORTS, DESIGNS, buildMechanism } from "./src/designs.js";
export { MIN_EPSILON, WEAK_EPSILON, ONE_SIDED_STATEMENT, posteriorBound, privacyStatement, respondentStatement, splitBallotStatement, repeatedStatement } from "./src/privacy.js";
export { ARMS, SplitBallot } from "./src/splitballot.js";
export { Schedule, parseInstant } from "./src/schedule.js";
export { Completion } from "./src/completion.js";
export { drawOrder } from "./src/order.js";
export { ExpressionError, MAX_EXPRESSION_LENGTH, canonicalNumber, parseExpression, expressionText, evaluateExpression } from "./src/skiplogic.js";
export { QUESTION_TYPES, MAX_ITEMS, MAX_OPTIONS, MAX_SECTIONS, isRightToLeft, localize, Note, Question, Section, leakMessage, Survey } from "./src/survey.js";
export { SubmitError, newIdempotencyKey, SurveyNotFound, StaleSpec, SurveyClosed, WaveClosed, TokenAlreadyUsed, NoWaveOpen, QuotaFull, ResponseRejected, RetryLater, classify, isRetryable, retryAfterSeconds, fetchSurvey, postResponse, submit, obtainCredential, credentialSlot, isUnreachable } from "./src/submit.js";
export { STATUS_TABLE } from "./src/statuses.js";
export { MemoryStorage, Outbox } from "./src/outbox.js";
export { Memo, MemoError, MemoStream, SECRET_BYTES, memoMessage, sha256, hmacSha256 } from "./src/memo.js";
export { DEFAULT_REFRESH, InstantLayer, Repeated, memoized } from "./src/panels.js";
export { BlindSignatureError, PublicKey, prepare as prepareBlind, blind, finalize as finalizeBlind, verify as verifyBlind } from "./src/blind_rsa.js";
