// Designs: each builds a mechanism from a spec's privacy parameters (Python: designs.py).
// Part of deniable.js; no dependencies.

import { cheatingDetection, respondentText, stochasticLieDetector } from "./compliance.js";
import { SpecError, show } from "./errors.js";
import { EpsilonRequest, ONE, ORDINAL_BASE_BITS, ZERO, frac, integerRoot, parseFraction } from "./exact.js";
import { ChannelMechanism, LaplaceMechanism, OrdinalMechanism, SymmetricMechanism, UnaryMechanism, YES_NO } from "./mechanisms.js";
import { MIN_EPSILON } from "./privacy.js";


function probabilityParam(params, name, where) {
  if (!(name in params)) throw new SpecError(`${where}.${name}: missing`);
  const value = parseFraction(params[name], `${where}.${name}`);
  if (value.cmp(ZERO) < 0 || value.cmp(ONE) > 0) throw new SpecError(`${where}.${name}: must be between 0 and 1, got ${show(params[name])}`);
  return value;
}

function binary(design, params, yesGivenYes, yesGivenNo) {
  if (yesGivenYes.cmp(yesGivenNo) === 0) {
    throw new SpecError(`privacy: this ${design} design sends the same report whatever the answer; nothing about the population could be estimated`);
  }
  const columns = [[yesGivenYes, ONE.sub(yesGivenYes)], [yesGivenNo, ONE.sub(yesGivenNo)]];
  return new ChannelMechanism(design, params, YES_NO, YES_NO, columns);
}

function expBound(request, where, divisor = 1) {
  const bound = request.expLowerBound(divisor);
  if (bound.cmp(ONE) <= 0) {
    throw new SpecError(`${where}.epsilon: too small to give this question any signal; choose a larger epsilon`);
  }
  return bound;
}

function epsilonOr(params, where, alternative = null) {
  if ("epsilon" in params && alternative && alternative in params) {
    throw new SpecError(`${where}: give either epsilon or ${alternative}, not both`);
  }
  if ("epsilon" in params) return EpsilonRequest.parse(params.epsilon, `${where}.epsilon`);
  if (alternative && alternative in params) return null;
  throw new SpecError(`${where}: epsilon${alternative ? ` or ${alternative}` : ""} is required`);
}

/** The reports of the respondent-side designs: what the respondent chooses, already randomized. */
export const CROSSWISE_REPORTS = ["same", "different"];
export const TRIANGULAR_REPORTS = ["no_to_both", "other"];

function companionShare(params, where) {
  const p = probabilityParam(params, "p", where);
  if (p.isZero() || p.cmp(ONE) === 0) {
    throw new SpecError(`${where}.p: must be strictly between 0 and 1 (the known share of 'yes' to the companion question), got ${show(params.p)}`);
  }
  return p;
}

function byRespondent(mechanism) {
  mechanism.respondentRandomizes = true;
  return mechanism;
}

const designBuilders = {
  forced_response(params, where, _options, _grid, text) {
    const [truth, yes, no] = ["truth", "yes", "no"].map((n) => probabilityParam(params, n, where));
    const total = truth.add(yes).add(no);
    if (total.cmp(ONE) !== 0) throw new SpecError(`${where}: truth + yes + no must be 1, got ${truth} + ${yes} + ${no} = ${total}`);
    if (truth.isZero()) throw new SpecError(`${where}.truth: must be greater than 0, or the report carries no information`);
    const normalized = { design: "forced_response", truth: `${truth}`, yes: `${yes}`, no: `${no}` };
    const randomizer = params.randomizer;
    if (randomizer === undefined || randomizer === null) return binary("forced_response", normalized, truth.add(yes), yes);
    if (typeof randomizer !== "object" || Array.isArray(randomizer) || Object.keys(randomizer).join() !== "text") {
      throw new SpecError(`${where}.randomizer: a mapping with the one key 'text' (the instruction the respondent follows, ` +
        `e.g. 'If your mother's birthday is in January or February, answer yes; …'), got ${show(randomizer)}`);
    }
    normalized.randomizer = { text: respondentText(randomizer.text, `${where}.randomizer.text`, text) };
    return byRespondent(binary("forced_response", normalized, truth.add(yes), yes));
  },
  crosswise(params, where, _options, _grid, text) {
    const p = companionShare(params, where);
    if (p.cmp(frac(1n, 2n)) === 0) {
      throw new SpecError(`${where}.p: 1/2 makes 'same' and 'different' equally likely whatever the answer, so the report says ` +
        "nothing; choose a companion question whose 'yes' share is known and not 1/2");
    }
    const companion = respondentText(params.companion, `${where}.companion`, text);
    const normalized = { design: "crosswise", companion, p: `${p}` };
    return byRespondent(new ChannelMechanism("crosswise", normalized, YES_NO, [...CROSSWISE_REPORTS],
      [[p, ONE.sub(p)], [ONE.sub(p), p]]));
  },
  cheating_detection(params, where, _options, _grid, text) { return cheatingDetection(params, where, text); },
  stochastic_lie_detector(params, where, _options, _grid, text) { return stochasticLieDetector(params, where, text); },
  triangular(params, where, _options, _grid, text) {
    const p = companionShare(params, where);
    const companion = respondentText(params.companion, `${where}.companion`, text);
    const normalized = { design: "triangular", companion, p: `${p}` };
    return byRespondent(new ChannelMechanism("triangular", normalized, YES_NO, [...TRIANGULAR_REPORTS],
      [[ZERO, ONE], [ONE.sub(p), p]]));
  },
  warner(params, where) {
    const p = probabilityParam(params, "p", where);
    if (p.cmp(frac(1n, 2n)) === 0) throw new SpecError(`${where}.p: 1/2 makes the report independent of the answer; choose p ≠ 1/2`);
    return binary("warner", { design: "warner", p: `${p}` }, p, ONE.sub(p));
  },
  unrelated_question(params, where) {
    const p = probabilityParam(params, "p", where);
    const innocuous = probabilityParam(params, "innocuous_yes", where);
    if (p.isZero()) throw new SpecError(`${where}.p: must be greater than 0, or the report carries no information`);
    const normalized = { design: "unrelated_question", p: `${p}`, innocuous_yes: `${innocuous}` };
    const yesGivenNo = ONE.sub(p).mul(innocuous);
    return binary("unrelated_question", normalized, p.add(yesGivenNo), yesGivenNo);
  },
  k_rr(params, where, options) {
    const k = options.length;
    const request = epsilonOr(params, where, "p_truth");
    let pTruth;
    let normalized;
    if (request) {
      const bound = expBound(request, where);
      pTruth = bound.div(bound.add(frac(BigInt(k - 1))));
      normalized = { design: "k_rr", epsilon: request.canonical() };
    } else {
      pTruth = probabilityParam(params, "p_truth", where);
      if (pTruth.cmp(frac(1n, BigInt(k))) <= 0) {
        throw new SpecError(`${where}.p_truth: must exceed 1/${k} (one over the number of options), got ${show(params.p_truth)}`);
      }
      normalized = { design: "k_rr", p_truth: `${pTruth}` };
    }
    return new SymmetricMechanism("k_rr", normalized, options, pTruth, ONE.sub(pTruth).div(frac(BigInt(k - 1))));
  },
  ordinal(params, where, options) {
    const request = epsilonOr(params, where);
    const bound = expBound(request, where);
    const degree = BigInt(options.length - 1);
    const scale = 1n << ORDINAL_BASE_BITS;
    // the smallest n with n^(k-1) * L >= scale^(k-1), L = bound as a fraction
    const wanted = scale ** degree * bound.d;
    const target = wanted / bound.n + (wanted % bound.n === 0n ? 0n : 1n);
    const root = integerRoot(target, degree);
    const n = root ** degree >= target ? root : root + 1n;
    const normalized = { design: "ordinal", epsilon: request.canonical() };
    return new OrdinalMechanism("ordinal", normalized, options, frac(n, scale));
  },
  unary(params, where, options) {
    const variant = params.variant ?? "symmetric";
    if (variant !== "symmetric" && variant !== "optimized") {
      throw new SpecError(`${where}.variant: must be 'symmetric' or 'optimized', got ${show(variant)}`);
    }
    const request = epsilonOr(params, where);
    const bound = expBound(request, where, options.length);
    let keepOne;
    let flipZero;
    if (variant === "symmetric") {
      keepOne = bound.div(ONE.add(bound));
      flipZero = ONE.sub(keepOne);
    } else {
      keepOne = frac(1n, 2n);
      flipZero = ONE.div(frac(2n).mul(bound));
    }
    const normalized = { design: "unary", epsilon: request.canonical(), variant };
    return new UnaryMechanism("unary", normalized, options, keepOne, flipZero);
  },
  laplace(params, where, options, grid) {
    const request = epsilonOr(params, where);
    const [minimum, maximum, step] = grid;
    const points = Number(maximum.sub(minimum).div(step).floor());
    const alpha = ONE.div(expBound(request, where, points));
    return new LaplaceMechanism("laplace", { design: "laplace", epsilon: request.canonical() }, minimum, maximum, step, alpha);
  },
};

/** design name -> [question types it serves, parameter names it accepts] */
export const DESIGNS = {
  forced_response: [["yes_no"], ["truth", "yes", "no", "randomizer"]],
  crosswise: [["yes_no"], ["companion", "p"]],
  cheating_detection: [["yes_no"], ["groups"]],
  stochastic_lie_detector: [["yes_no"], ["groups"]],
  triangular: [["yes_no"], ["companion", "p"]],
  warner: [["yes_no"], ["p"]],
  unrelated_question: [["yes_no"], ["p", "innocuous_yes"]],
  k_rr: [["yes_no", "choice", "ordinal"], ["epsilon", "p_truth"]],
  ordinal: [["ordinal"], ["epsilon"]],
  unary: [["multi_select"], ["epsilon", "variant"]],
  laplace: [["number"], ["epsilon"]],
};

export const DEFAULT_PRIVACY = { yes_no: { design: "forced_response", truth: "1/2", yes: "1/4", no: "1/4" } };

function publicMechanism(type, options, grid) {
  const params = { design: "none" };
  if (type === "yes_no") return new ChannelMechanism("none", params, YES_NO, YES_NO, [[ONE, ZERO], [ZERO, ONE]]);
  if (type === "choice" || type === "ordinal") {
    return new SymmetricMechanism("none", params, options, ONE, ZERO);
  }
  if (type === "multi_select") return new UnaryMechanism("none", params, options, ONE, ZERO);
  return new LaplaceMechanism("none", params, ...grid, null);
}

/** The mechanism a question's privacy field asks for. */
/** The mechanism a question's privacy field asks for; `text(value, where)` checks a text the respondent
 * reads (a companion question, a randomizer's instruction) in the survey's languages. */
export function buildMechanism(type, privacy, where, options = null, grid = null, text = null) {
  if (privacy === "none") return publicMechanism(type, options, grid);
  if (privacy === null || typeof privacy !== "object" || Array.isArray(privacy)) {
    throw new SpecError(`${where}: expected 'none' or a mapping with a 'design', got ${show(privacy)}`);
  }
  const design = privacy.design;
  if (design === undefined || design === null) {
    // Usually a misspelt key ("desgin:"): name it rather than the design it failed to give.
    const others = Object.keys(privacy).filter((key) => key !== "design").sort();
    // difflib.get_close_matches: the best score at least 0.75, ties to the larger key.
    const close = others.map((key) => [similarity(key, "design"), key]).filter(([score]) => score >= 0.75)
      .sort(([a, x], [b, y]) => b - a || (y > x ? 1 : y < x ? -1 : 0)).map(([, key]) => key)[0];
    const hint = close ? `; is '${close}' a misspelling of 'design'?`
      : others.length ? ` (keys given: ${others.map((k) => `'${k}'`).join(", ")})` : "";
    throw new SpecError(`${where}.design: missing${hint} Choose one of ${Object.keys(DESIGNS).join(", ")} (or privacy: none)`);
  }
  if (!Object.hasOwn(DESIGNS, design)) {
    throw new SpecError(`${where}.design: unknown design ${show(design)}; choose one of ${Object.keys(DESIGNS).join(", ")} (or privacy: none)`);
  }
  const [types, accepted] = DESIGNS[design];
  if (!types.includes(type)) {
    throw new SpecError(`${where}.design: ${design} does not apply to ${type} questions (it serves ${types.join(", ")})`);
  }
  const unknown = Object.keys(privacy).filter((key) => key !== "design" && !accepted.includes(key)).sort();
  if (unknown.length) throw new SpecError(`${where}: unknown field '${unknown[0]}' for design ${design} (accepted: ${accepted.join(", ")})`);
  const mechanism = designBuilders[design](privacy, where, type === "yes_no" ? YES_NO : options, grid, text);
  // A requested ε is met from below (on a 2^-32 grid): 0.01 asked may come out a hair under 0.01.
  if (mechanism.expEpsilon !== null && mechanism.epsilon < MIN_EPSILON * (1 - 1e-3)) {
    throw new SpecError(`${where}: ε = ${Number(mechanism.epsilon.toPrecision(3))} is so close to 0 that a report says next to ` +
      `nothing about the answer; estimates would need millions of respondents. Use ε ≥ ${MIN_EPSILON} (0.5 to 3 is usual)`);
  }
  return mechanism;
}

/** Python's difflib ratio for two short keys: 2·matches / total length (matches by longest common blocks). */
function similarity(a, b) {
  const matches = (x, y) => {
    if (!x.length || !y.length) return 0;
    let best = 0, atX = 0, atY = 0;
    for (let i = 0; i < x.length; i++) {
      for (let j = 0; j < y.length; j++) {
        let k = 0;
        while (i + k < x.length && j + k < y.length && x[i + k] === y[j + k]) k++;
        if (k > best) { best = k; atX = i; atY = j; }
      }
    }
    if (!best) return 0;
    return best + matches(x.slice(0, atX), y.slice(0, atY)) + matches(x.slice(atX + best), y.slice(atY + best));
  };
  return (2 * matches(a, b)) / (a.length + b.length);
}
