FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md constraints.txt ./
COPY memory_review ./memory_review
# The versions the suite passed on (constraints.txt), as make install and CI use.
RUN pip install --no-cache-dir -c constraints.txt '.[prod]'
COPY . .
# collectstatic imports the settings, which refuse to start without a key: a throwaway one,
# for this step only (the running container must be given its own).
RUN SECRET_KEY=collectstatic-only-not-a-secret python manage.py collectstatic --noinput -v0
EXPOSE 8000
# Threaded workers: a long download outlives the worker timeout (memory_review/gunicorn_conf.py says why).
CMD ["gunicorn", "-c", "memory_review/gunicorn_conf.py"]
