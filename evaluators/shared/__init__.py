"""What the papers' evaluators share: :mod:`.api` (the library's entry point, :func:`evaluate`), :mod:`.applies`
(which protocols a model runs), :mod:`.params` (the typed params sections), :mod:`.bootstrap`, :mod:`.training`,
:mod:`.report`, :mod:`.smoke` and :mod:`.model_summary`."""
