from django.apps import AppConfig


class TroubleshooterConfig(AppConfig):
    name = "troubleshooter"

    def ready(self) -> None:
        """Register the troubleshooter with kb: its trees are checked in the same content load, and a
        diagnosis links into the wizard with its facts."""
        from kb.extensions import content_check_register, facts_link_register

        content_check_register("troubleshooter.library.trees_check")
        facts_link_register("troubleshooter.links.wizard_url_for_facts")
        facts_link_register("troubleshooter.links.capture_url_for_facts", purpose="capture")
