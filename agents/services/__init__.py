"""Agent services. Import the module you need (`importing`, `exporting`, ...); nothing is loaded here."""
