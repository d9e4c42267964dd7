# A ticket event may come from `web`: a customer on a public page (the rating page; issue 30).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tickets", "0020_merge_reports"),
    ]

    operations = [
        migrations.AlterField(
            model_name="ticketevent",
            name="source_type",
            field=models.CharField(
                choices=[
                    ("api", "api"),
                    ("email", "email"),
                    ("admin", "admin"),
                    ("system", "system"),
                    ("web", "web"),
                ],
                max_length=10,
            ),
        ),
    ]
