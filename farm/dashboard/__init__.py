"""The dashboard: the results store as plain HTML pages (inline SVG charts, no JavaScript).

:mod:`.data`, :mod:`.runlist` and :mod:`.trends` read the store; :mod:`.pages` and :mod:`.runpage`
gather what each page shows and render its jinja2 template (``templates/``, autoescaping:
:mod:`.render`); :mod:`.site` maps paths to pages; ``farm dashboard --out DIR`` writes every path as a
file and ``farm serve`` answers the same paths live (:mod:`.server`, read-only).
"""
