"""Small helpers every floor may use: lazy names, text made safe to show, secrets redacted."""
