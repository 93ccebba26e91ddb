"""What `load` returns: the survey's data (`survey_data.SurveyData`) with its estimates as methods, in the manner of a
data object whose analyses hang off it (``data.estimate("dodged")``, ``data.by_wave("burnout")``). The modules that
estimate read `SurveyData`; only this one, above them, reaches down to them, so no arrow climbs back."""

from __future__ import annotations

from .estimation import estimate
from .every_question import each_estimate
from .results import EstimateResult
from .survey_data import SurveyData
from .waves import by_wave, compare_waves


class LoadedSurvey(SurveyData):
    """One version of a survey with its reports, or several pooled (``load(..., all_versions=True)``), and the
    estimates of its questions. Build with `load`.

    Pooled, each question is estimated over the versions that ask it, provided its randomization
    (design, answers, exact channel) and whom skip logic asks it of are the same in all of them: a
    reworded question keeps its data, a changed design refuses with `PoolingError` naming the change.
    """

    def estimate(self, question_id: str, level: float = 0.95, method: str | None = None, simultaneous: bool = False,
                 language: str | None = None, design=None, values: bool = False) -> EstimateResult:
        """The estimates of one question (`estimate`)."""
        return estimate(self, question_id, level=level, method=method, simultaneous=simultaneous, language=language,
                        design=design, values=values)

    def by_wave(self, question_id: str, level: float = 0.95, method: str | None = None, design=None) -> dict:
        """{wave label: EstimateResult} of a repeated survey's question, wave by wave (`analysis.waves`); with a
        ``design``, each wave a domain of the sample."""
        return by_wave(self, question_id, level, method, design)

    def compare_waves(self, question_id: str, first: str, second: str, answer=None, level: float = 0.95,
                      design=None):
        """The change of an answer's share (or a mean) from wave ``first`` to wave ``second`` (`analysis.waves`)."""
        return compare_waves(self, question_id, first, second, answer, level, design)

    def estimate_all(self, level: float = 0.95, simultaneous: bool = False, language: str | None = None) -> dict:
        """Every question with something to estimate (each on its own n: skip logic asks some of some respondents
        only; `nothing_to_estimate` says why the others have no estimate)."""
        return {qid: result for qid, result in each_estimate(self, self.survey.questions, level=level,
                                                             simultaneous=simultaneous, language=language)
                if isinstance(result, EstimateResult)}
