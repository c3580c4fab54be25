"""Pages: an HTML page chunked on its headings into contexts, and chunk admission.

- ``chunking``: the chunker (BeautifulSoup), nothing lost;
- ``admission``: top-K admission of scored chunks inside a token budget.
"""
