"""Pages: an HTML page chunked on its headings into contexts, and chunk admission.

- ``blocks``: a page's visible text as blocks (BeautifulSoup);
- ``chunking``: the chunker (blocks packed into chunks), nothing lost;
- ``admission``: the admission policies over judge scores (the one top-K rule, floors,
  sub-tasks);
- ``chunk_admission``: top-K admission of a page's scored chunks inside a token budget.
"""
