"""Case content: reading files from content/, validating them, rendering Markdown, loading the database."""
