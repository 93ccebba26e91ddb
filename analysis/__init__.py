"""deniable.analysis: debiased estimates from randomized reports."""
