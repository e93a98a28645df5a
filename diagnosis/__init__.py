"""Log diagnosis: pure Python, no Django. Text in, ranked cases with evidence and facts out."""
