"""The disk store and what lives in it.

Owns the store folder (blobs, the decision ledger, per-session state:
``disk``), the link between a transcript and its store (``link``), offloading
tool outputs into the store and their previews (``offload``), the original
lines of restored entries (``original_lines``) and restoring everything a
stage took out (``expand``).

Must not import: stages, summarize, pipeline, reports, cli. Undoing a stage's
own records is the stage's job: ``expand`` is handed the undo steps.
"""
