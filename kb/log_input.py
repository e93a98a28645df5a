"""Read a log out of a request: a raw body, a form field `log`, or an uploaded file, within the size limit."""
from __future__ import annotations

import tempfile

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpRequest, QueryDict


class SpooledUploadHandler(FileUploadHandler):
    """Every uploaded file is held in memory up to FILE_UPLOAD_MAX_MEMORY_SIZE, then spooled to a temporary
    file that has no name (tempfile.TemporaryFile: O_TMPFILE, or unlinked right after it is opened). Django's
    own handlers keep a named `tmpXXXX.upload` file for the whole request, which a worker killed by gunicorn's
    timeout leaves behind with the log's secrets in it; a file without a name goes when its process does."""

    def new_file(self, *args, **kwargs) -> None:
        super().new_file(*args, **kwargs)
        spool = tempfile.SpooledTemporaryFile(max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE,
                                              dir=settings.FILE_UPLOAD_TEMP_DIR)
        self.file = UploadedFile(spool, self.file_name, self.content_type, 0, self.charset, self.content_type_extra)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        self.file.write(raw_data)

    def file_complete(self, file_size: int) -> UploadedFile:
        self.file.seek(0)
        self.file.size = file_size
        return self.file

    def upload_interrupted(self) -> None:
        if hasattr(self, "file"):
            self.file.close()


class LogTooLarge(Exception):
    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"The log is larger than the limit of {limit_text(limit)}.")


class NoLog(Exception):
    """The request carried nothing to diagnose."""


class MixedInput(NoLog):
    """A paste and uploaded files together: they may be different jobs, so they are never merged."""


def limit_text(limit: int) -> str:
    return f"{limit / (1024 * 1024):g} MB" if limit >= 1024 * 1024 else f"{limit} bytes"


def log_from_request(request: HttpRequest, *, allow_raw_body: bool = False) -> list[tuple[str, bytes]]:
    """The sources to diagnose. Raises LogTooLarge before reading a body that is over the limit."""
    limit = settings.KB_MAX_LOG_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    # Multipart framing adds a little; anything beyond that margin is over the limit for sure.
    if declared > limit + 64 * 1024:
        raise LogTooLarge(limit)
    content_type = request.META.get("CONTENT_TYPE", "")
    try:
        if allow_raw_body and content_type.startswith("application/x-www-form-urlencoded"):
            # `curl --data-binary @job.log URL` labels a raw log as a form. A body with a `log` field is one;
            # anything else (no such field, or too many '&' to parse) is the log itself.
            body = request.body
            if len(body) > limit:
                raise LogTooLarge(limit)
            try:
                fields = QueryDict(body, encoding=request.encoding)
            except (TooManyFieldsSent, ValueError):
                fields = QueryDict()
            if "log" in fields:
                text = fields.get("log", "")
                sources = [("pasted", text.encode("utf-8", errors="replace"))] if text.strip() else []
            else:
                sources = [("body", body)] if body.strip() else []
        elif content_type.startswith(("multipart/form-data", "application/x-www-form-urlencoded")):
            sources: list[tuple[str, bytes]] = []
            for upload in request.FILES.getlist("file"):
                if upload.size > limit:
                    raise LogTooLarge(limit)
                sources.append((upload.name or "upload", upload.read()))
            text = request.POST.get("log", "")
            if text.strip() and sources:
                raise MixedInput("You pasted a log and chose files: diagnose one job at a time. Clear the box to "
                                 "diagnose the files, or remove the files to diagnose the paste; a paste and "
                                 "files are never merged into one job.")
            if text.strip():
                data = text.encode("utf-8", errors="replace")
                if len(data) > limit:
                    raise LogTooLarge(limit)
                sources.insert(0, ("pasted", data))
        elif allow_raw_body:
            body = request.body
            if len(body) > limit:
                raise LogTooLarge(limit)
            sources = [("body", body)] if body.strip() else []
        else:
            sources = []
    except RequestDataTooBig:
        raise LogTooLarge(limit) from None
    if sum(len(data) for _, data in sources) > limit:
        raise LogTooLarge(limit)
    if not sources:
        raise NoLog("Paste a log or an error line, or choose a log file to upload.")
    return sources
