"""The Django admin's author: after AuthenticationMiddleware, a signed-in staff user acts as `administrator`.

ApiRequestMiddleware (earlier in the chain) already set the request's IP and User-Agent and resets the actor
when the request ends.
"""

from helpdesk.context import ADMINISTRATOR, update_actor


class AdminActorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if request.path.startswith("/admin/") and user is not None and user.is_authenticated:
            update_actor(type=ADMINISTRATOR, id=user.pk, email=user.email)
        return self.get_response(request)
