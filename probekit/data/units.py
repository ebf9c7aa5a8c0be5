"""The unit an interval resamples for an example (the cluster bootstrap, :mod:`evaluators.shared.bootstrap`): the
rows that share one outcome, so one draw. A key (:mod:`probekit.data.keys`) names a row; one fact under two
templates has two keys and one unit. One definition, which ``probes report``, ``probes olmpics-report`` (through
the ``unit`` the zero-shot and curve evaluators write into each prediction row), ``probes diff`` and the browser
resample:

=============  =====================================================================================================
family         unit
=============  =====================================================================================================
MC-MLM, MC-QA  the fact (:func:`fact_unit`): the row's key (``args`` and ``facts``), which every template of the fact
               and its NO-LANG and PERTURBED-LANG rows share; a row that names neither (a release file's) its
               ``source_id`` or ``id``, which a release file repeats for a fact asked again
ParaRel        the tuple: relation, subject and object (the key less its pattern: every pattern asks the tuple)
pair sets      the pair: its key, ``pair_id``, which the pair's original, REVERSE and SIGNAL rows share
=============  ====================================================================================================="""

from __future__ import annotations

from probekit.data.keys import _ROW, _SEP, family, mc_key


def fact_unit(row: dict) -> str:
    """The fact an MC-MLM or MC-QA row asks: its :func:`probekit.data.keys.mc_key` where it names its ``args`` or
    ``facts`` (every template of the fact and every control row of it share it, so a fact asked under two
    templates is one draw); else its ``source_id`` or ``id`` (a control row its original's; a release file that
    asks a fact again repeats its id)."""
    return mc_key(row) if row.get("args") or row.get("facts") else str(row.get("source_id") or row.get("id"))


def unit(fmt: str, row: dict) -> str:
    """The unit of a row of a ``fmt`` dataset (see the module's table)."""
    fam = family(fmt)
    if fam == "mc":
        return fact_unit(row)
    key = _ROW[fam](row, {}, False)[0]
    return key.rsplit(_SEP, 1)[0] if fam == "cloze" else key
