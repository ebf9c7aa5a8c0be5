"""The results browser: a static site over every prediction file of the project (:mod:`.build`), the page it
ships (``static/``), a local server with range requests (:mod:`.serve`) and a static Space (:mod:`.space`)."""
