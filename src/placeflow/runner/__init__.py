"""A run's machinery: the order of the stages, once (orchestrate), and what carries it out.

orchestrate (the order), prepare (read, dedupe, fresh, plan and open, before anything is
spent), carry (send, poll, fetch, load per chunk), sender (the thread that sends), steps (the
stages as named steps a flow can wrap), ending (a run's end: status, summary, exit), target
(the service a run talks to: a key and base URL, or the embedded sandbox) and refresh (a run
over the warehouse's own stale places).
"""
