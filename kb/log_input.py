"""Read a job out of a request: a raw body, a form field `log`, or uploaded files (logs, or a .tar.gz, .tar or
.zip of a log directory), within the size limits. Uploads and archives go through diagnosis.job_files, the reader the
command line uses, so ranks come from paths the same way and hostile archives are refused the same way."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpRequest, QueryDict

from diagnosis.job_files import (
    MAX_MEMBER_BYTES,
    JobFile,
    JobInput,
    JobInputError,
    JobTooLarge,
    job_read,
    looks_like_archive,
    size_text,
)


class SpooledUploadHandler(FileUploadHandler):
    """Every uploaded file is held in memory up to FILE_UPLOAD_MAX_MEMORY_SIZE, then spooled to a temporary
    file that has no name (tempfile.TemporaryFile: O_TMPFILE, or unlinked right after it is opened). Django's
    own handlers keep a named `tmpXXXX.upload` file for the whole request, which a worker killed by gunicorn's
    timeout leaves behind with the log's secrets in it; a file without a name goes when its process does."""

    def new_file(self, *args, **kwargs) -> None:
        super().new_file(*args, **kwargs)
        spool = tempfile.SpooledTemporaryFile(max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE, dir=settings.FILE_UPLOAD_TEMP_DIR)
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
    """A log over the size limit. Its title and advice are the one wording of the 413 page, whichever layer refuses
    (the middleware on Content-Length, the views on the body read)."""

    title = "Log too large"
    advice = (
        "Trim it to the part around the first error, or split it per rank, or run python manage.py diagnose on the "
        "command line, which has no limit."
    )

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"The log is larger than the limit of {size_text(limit)}.")

    def help_text(self) -> str:
        """What the page says: the limit, then what to do."""
        return f"{self} {self.advice}"


class NoLog(Exception):
    """The request carried nothing to diagnose."""


class MixedInput(NoLog):
    """A paste and uploaded files together: they may be different jobs, so they are never merged."""


@dataclass(frozen=True)
class Refusal:
    """Why a request's job was refused, written once for the page and the API: the status, the page's title, the
    reason (all the API says), what to do about it (the page adds it), the form field it is about, and the limit
    passed when a size limit was."""

    status: int
    title: str
    reason: str
    advice: str
    field: str
    limit_bytes: int | None = None

    def page_message(self) -> str:
        return f"{self.reason} {self.advice}".strip()

    def json(self) -> dict:
        return {"error": self.reason} | ({} if self.limit_bytes is None else {"limit_bytes": self.limit_bytes})


REFUSED = (LogTooLarge, JobInputError, NoLog)  # what job_from_request raises for input it will not diagnose


def refusal(err: Exception) -> Refusal:
    """The answer to one of REFUSED's errors."""
    if isinstance(err, LogTooLarge):
        return Refusal(413, err.title, str(err), err.advice, "log", err.limit)
    if isinstance(err, JobTooLarge):
        advice = "Upload the logs of the ranks that matter, or run python manage.py diagnose on the archive."
        return Refusal(413, "Upload too large", str(err), advice, "file", settings.KB_MAX_JOB_BYTES)
    if isinstance(err, JobInputError):
        return Refusal(400, "Upload refused", str(err), "", "file")
    return Refusal(400, "Nothing to diagnose", str(err), "", "log")


def job_from_request(request: HttpRequest, *, allow_raw_body: bool = False) -> JobInput:
    """The job to diagnose. Raises LogTooLarge before reading a body that is over the limit, NoLog when there
    is nothing to read, and diagnosis.job_files's JobInputError (JobTooLarge past the uncompressed limit) for an
    archive it refuses."""
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
            sources = []
            uploads = [(upload.name, upload) for upload in request.FILES.getlist("file")] + _folder_uploads(request)
            if sum(upload.size for _, upload in uploads) > limit:
                raise LogTooLarge(limit)
            text = request.POST.get("log", "")
            if text.strip() and uploads:
                raise MixedInput(
                    "You pasted a log and chose files: diagnose one job at a time. Clear the box to "
                    "diagnose the files, or remove the files to diagnose the paste; a paste and "
                    "files are never merged into one job."
                )
            if uploads:
                return _job_checked(job_read(list(uploads), **_job_limits()))
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
    except TooManyFilesSent:
        raise JobInputError(
            f"The upload holds more than {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files: upload the log folder as "
            "one .tar.gz, .tar or .zip instead."
        ) from None
    if sum(len(data) for _, data in sources) > limit:
        raise LogTooLarge(limit)
    if not sources:
        raise NoLog("Paste a log or an error line, or choose a log file to upload.")
    name, data = sources[0]
    if looks_like_archive(data):
        return _job_checked(job_read([(name, data)], **_job_limits()))
    return JobInput(files=[JobFile(name=name, data=data)])


def _folder_uploads(request: HttpRequest) -> list[tuple[str, UploadedFile]]:
    """(path, file) for each file of a chosen folder: its path inside the folder when the page sent those paths
    (static/js/site.js copies each file's webkitRelativePath into a `folder_path` field, in the same order), so
    torchrun's `<rank>/stdout.log` keeps the folder that names its rank; else its bare name."""
    files = request.FILES.getlist("folder")
    paths = request.POST.getlist("folder_path")
    if len(paths) != len(files) or any(not path or path.rsplit("/", 1)[-1] != upload.name for path, upload in zip(paths, files)):
        paths = [upload.name for upload in files]
    return list(zip(paths, files))


def _job_limits() -> dict[str, float]:
    """The web's limits on a job: the uncompressed bytes of the whole job (KB_MAX_JOB_BYTES) and of one file, and
    the CPU time to unpack it (the diagnosis budget, KB_DIAGNOSIS_BUDGET_S); the counts of members and folders are
    diagnosis.job_files's own."""
    total = settings.KB_MAX_JOB_BYTES
    return {"total_bytes": total, "member_bytes": min(MAX_MEMBER_BYTES, total), "cpu_seconds": settings.KB_DIAGNOSIS_BUDGET_S}


def _job_checked(job: JobInput) -> JobInput:
    if not job.files:
        skipped = "; ".join(job.notes[:5]) or "the archive holds no files"
        raise NoLog(f"Nothing in the upload could be read as a log: {skipped}.")
    return job
