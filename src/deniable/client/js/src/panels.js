// Repeated surveys (panels): the permanent report per true answer (from the memo), re-randomized by an
// instantaneous layer in every wave; the composite channel as a mechanism of the design's own shape
// (Python: panels.py, which explains the design).
// Part of deniable.js; no dependencies.

import { SpecError, isMapping, show } from "./errors.js";
import { EpsilonRequest, ONE, frac, fmax, fmin, gcd } from "./exact.js";
import { ChannelMechanism, LaplaceMechanism, SymmetricMechanism, UnaryMechanism, symmetricIndex } from "./mechanisms.js";
import { bernoulli, defaultSource } from "./randomness.js";
import { GroupedMechanism } from "./compliance.js";

/** Without instant_epsilon the layer replaces the permanent report by a uniform one with this probability. */
export const DEFAULT_REFRESH = frac(1n, 10n);

/** A survey's `repeated` field: true, or {instant_epsilon: ε}; null when absent or false. */
export class Repeated {
  constructor(instantEpsilon = null) { this.instantEpsilon = instantEpsilon; }
  static parse(raw, where = "survey.repeated") {
    if (raw === undefined || raw === null || raw === false) return null;
    if (raw === true) return new Repeated();
    if (isMapping(raw) && Object.keys(raw).length === 1 && "instant_epsilon" in raw) {
      return new Repeated(EpsilonRequest.parse(raw.instant_epsilon, `${where}.instant_epsilon`));
    }
    throw new SpecError(`${where}: true, or a mapping {instant_epsilon: ε} (the ε of the layer that re-randomizes the permanent report in each wave), got ${show(raw)}`);
  }
  canonical() { return this.instantEpsilon === null ? true : { instant_epsilon: this.instantEpsilon.canonical() }; }
  layer(mechanism) {
    if (mechanism instanceof UnaryMechanism) {
      let keep;
      if (this.instantEpsilon === null) keep = ONE.sub(DEFAULT_REFRESH.div(frac(2n)));
      else {
        const ratio = this.instantEpsilon.expLowerBound(mechanism.options.length);
        keep = ratio.div(ONE.add(ratio));
      }
      return new InstantLayer(keep, ONE.sub(keep), 2, true);
    }
    const size = mechanism.reports.length / (mechanism instanceof GroupedMechanism ? mechanism.groups.length : 1);
    if (this.instantEpsilon === null) {
      const other = DEFAULT_REFRESH.div(frac(BigInt(size)));
      return new InstantLayer(ONE.sub(DEFAULT_REFRESH).add(other), other, size);
    }
    const ratio = this.instantEpsilon.expLowerBound();
    const total = ratio.add(frac(BigInt(size - 1)));
    return new InstantLayer(ratio.div(total), ONE.div(total), size);
  }
}

const sameReport = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** k-ary randomized response over a block of `size` reports (perBit: over each option's bit). */
export class InstantLayer {
  constructor(keep, other, size, perBit = false) {
    this.keep = keep;
    this.other = other;
    this.size = size;
    this.perBit = perBit;
  }
  get expEpsilon() { return this.keep.div(this.other); }
  /** A fresh re-randomization of `report` (a permanent report, or what the respondent chose). */
  apply(mechanism, report, source) {
    if (this.perBit) {
      const chosen = new Set(report);
      return mechanism.options.filter((option) => chosen.has(option) === bernoulli(this.keep, source));
    }
    const block = mechanism instanceof GroupedMechanism ? mechanism.reports.filter((r) => r.group === report.group) : mechanism.reports;
    const position = block.findIndex((r) => sameReport(r, report));
    const denominator = (this.keep.d * this.other.d) / gcd(this.keep.d, this.other.d);
    const keep = this.keep.n * (denominator / this.keep.d);
    const other = this.other.n * (denominator / this.other.d);
    return block[symmetricIndex(source.randomBelow(denominator), position, keep, other)];
  }
  transform(probability, blockMass = ONE) { return this.other.mul(blockMass).add(this.keep.sub(this.other).mul(probability)); }
}

/** The composite channel instantaneous ∘ permanent, shaped like the permanent mechanism, with `permanent`
 * and `instant` attached (Python: panels.memoized). */
export function memoized(mechanism, layer) {
  let composite;
  if (mechanism instanceof UnaryMechanism) {
    const bit = (p) => layer.keep.mul(p).add(layer.other.mul(ONE.sub(p)));
    composite = new UnaryMechanism(mechanism.design, mechanism.params, mechanism.options, bit(mechanism.keepOne), bit(mechanism.flipZero));
  } else if (mechanism instanceof SymmetricMechanism) {
    composite = new SymmetricMechanism(mechanism.design, mechanism.params, mechanism.answers, layer.transform(mechanism.keep), layer.transform(mechanism.other));
  } else if (mechanism instanceof LaplaceMechanism) {
    composite = new MemoizedLaplace(mechanism, layer);
  } else if (mechanism instanceof GroupedMechanism) {
    const share = frac(1n, BigInt(mechanism.groups.length));
    const grouped = (column) => column.map((p) => layer.transform(p, share));
    composite = new GroupedMechanism(mechanism.design, mechanism.params, mechanism.groups, mechanism._columns.map(grouped),
      mechanism.latentClasses.map(([label, column]) => [label, grouped(column)]));
  } else if (mechanism instanceof ChannelMechanism) {
    composite = new ChannelMechanism(mechanism.design, mechanism.params, mechanism.answers, mechanism.reports,
      mechanism._columns.map((column) => column.map((p) => layer.transform(p))));
  } else {
    throw new TypeError(`no composite channel for ${mechanism.constructor.name}`);
  }
  composite.respondentRandomizes = mechanism.respondentRandomizes;
  composite.permanent = mechanism;
  composite.instant = layer;
  return composite;
}

class MemoizedLaplace extends LaplaceMechanism {
  constructor(permanent, layer) {
    super(permanent.design, permanent.params, permanent.minimum, permanent.maximum, permanent.step, permanent.alpha);
    this.layer = layer;
  }
  _indexProbability(r, a) { return this.layer.transform(super._indexProbability(r, a)); }
  _computeExpEpsilon() {
    // Rows 0 and N and the folded tails are the candidates (see the Python twin).
    const n = this.points;
    const [low, high] = this.reportRange;
    let worst = ONE;
    for (const row of new Set([0, n, low, high])) {
      const values = [0, n, Math.min(Math.max(row, 0), n)].map((a) => this._indexProbability(row, a));
      worst = fmax(worst, values.reduce(fmax).div(values.reduce(fmin)));
    }
    return worst;
  }
  randomize(answer, source = defaultSource) {
    const permanent = super.randomize(answer, source);
    return this.layer.apply(this, permanent, source);
  }
}
