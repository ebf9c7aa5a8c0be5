"""Raw sources: the manifest (``raw/sources.yaml``), fetch and verify (URL or mirror), loaders (raw files -> small
typed tables), SPARQL, word vectors, ParaRel's pattern graphs (its
edges are computed by ``generators/pararel/edges.py``)."""
