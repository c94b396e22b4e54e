"""One module per question a user asks: estimate, sweep, generate, serving (with its KV pool and
speculative decoding), cost, plan, and the notes that travel with each answer."""
