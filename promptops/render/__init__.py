"""Rendering prompts: the renderer, its Jinja sandbox and size limits, and the template filters."""
