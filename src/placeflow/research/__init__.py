"""Deep research in bulk: fields (attribute specs), plan (requests, estimate, budget), send
(write-ahead, never paying twice), load (answers in long form), run (the command's stages)."""
