"""Config directories in the original's on-disk formats: import (`importing`) and export (`exporting`).

A config directory spans three apps: personas, prompts and documents (agents), curated memories
(memory) and curated media descriptions (media_catalog). The orchestration lives here, above all
three, and each app reads and writes its own files (`memory.services.curated_io`,
`media_catalog.services.curated_io`). Import the module you need; nothing is loaded here.
"""
