"""`GET /healthz`: a load balancer's liveness check, answered by a worker without the database or the index.

It says that nginx reached gunicorn and a worker answered through the whole middleware stack, and nothing more,
so a database that is slow for a moment does not take every host out of rotation at once. It is also the trivial
view that `make bench` measures page throughput against (kb/management/commands/bench.py).
"""

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe


@never_cache
@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok\n", content_type="text/plain; charset=utf-8")
