// Types of "deniable/words/<code>" (en, es, fr, de, pt, ar): one language's page words, the templates of the privacy
// statements among them; pass one to privacyStatement(…, words) or Question.privacyStatement(prior, words).
import type { PageWords } from "./deniable.js";

declare const words: PageWords;
export default words;
