"""Deep research's request kind, plugged into the run's stages (`placeflow.runner.research`
runs them in the run's order): fields (attribute specs), plan (requests of up to 10 places x
the fields, their estimate), estimate (the service's estimate_only check), send (write-ahead,
never paying twice), load (answers in long form), account (the research figures)."""
