"""Pages: an HTML page chunked on its headings into contexts, and chunk admission.

- ``blocks``: a page's visible text as blocks (BeautifulSoup);
- ``chunking``: the chunker (blocks packed into chunks), nothing lost;
- ``admission``: top-K admission of scored chunks inside a token budget.
"""
