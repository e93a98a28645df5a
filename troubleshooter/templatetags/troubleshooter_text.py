"""Template filters for tree text: escaped before any markup is added."""

from django import template

from kb.templatetags.kb_extras import inline_code

register = template.Library()


# Tree help texts quote commands in `backticks`, like case front matter: one filter serves both.
register.filter("backticks", inline_code)
