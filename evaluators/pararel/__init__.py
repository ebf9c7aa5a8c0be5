"""ParaRel (Elazar et al. 2021): cloze queries, knowledge and consistency metrics, consistency training,
report and plots."""
