"""Versions you can read: the two sides of a comparison (a folder, a git revision read through DVC, a published
Hub revision: :mod:`sides`), the example-level diff of their datasets (:mod:`diff`, each split compared by
:mod:`probekit.data.compare` on the keys of :mod:`probekit.data.keys`) and its Markdown summary (:mod:`summary`)."""
