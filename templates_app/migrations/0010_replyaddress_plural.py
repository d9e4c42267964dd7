# The admin says "Reply addresses", not Django's automatic "Reply addresss" (issue 30).

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("templates_app", "0009_trusted_senders"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="replyaddress",
            options={"verbose_name_plural": "reply addresses"},
        ),
    ]
