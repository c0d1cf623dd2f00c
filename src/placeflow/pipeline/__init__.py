"""Pipeline stages: plain typed functions, each returning a summary; flows/ wires them."""
