"""Dataset folders on disk: the example schema, the one writer, cloze sets (ParaRel) and sentence-pair sets (CALUM)."""
