"""The dashboard: the results store as plain HTML pages (inline SVG charts, no JavaScript).

:mod:`.data` reads the store, :mod:`.pages` renders (every value escaped), :mod:`.site` maps paths
to pages; ``farm dashboard --out DIR`` writes every path as a file and ``farm serve`` answers the
same paths live (:mod:`.server`, read-only).
"""
