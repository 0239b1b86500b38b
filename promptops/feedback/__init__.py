"""Finding feedback: what happened to a finding after a reviewer posted it."""
