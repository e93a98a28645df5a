"""Static files as WhiteNoise serves them, less the manifest.

`collectstatic`'s `staticfiles.json` maps every file to its hashed name: no page needs it over HTTP, and it lists
everything the site ships (turn 3: `GET /static/staticfiles.json` answered 13,945 bytes). Django reads it from disk.
"""

from whitenoise.middleware import WhiteNoiseMiddleware

MANIFEST = "staticfiles.json"


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    def add_file_to_dictionary(self, url: str, path: str, stat_cache: dict | None = None) -> None:
        if url.rsplit("/", 1)[-1].startswith(MANIFEST):  # staticfiles.json, .gz, .br
            return
        super().add_file_to_dictionary(url, path, stat_cache=stat_cache)

    def find_file(self, url: str):
        if url.rsplit("/", 1)[-1].startswith(MANIFEST):  # DEBUG's autorefresh mode looks files up per request
            return None
        return super().find_file(url)
