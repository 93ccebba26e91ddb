"""deniable.analysis: debiased estimates, uncertainty, subgroups, regression and planning.

    from deniable.analysis import load, estimate
    data = load(db="deniable.db", survey_id="tax")
    estimate(data, "dodged").to_frame()

Names are imported from their modules on first use (`lazy_loader`, SPEC 1 of scientific Python), so a command that
only plans (numpy) never loads scipy, pandas or statsmodels; `__init__.pyi` lists them, for readers and tools.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
