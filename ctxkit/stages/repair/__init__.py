"""The repairs ``ctxkit doctor --fix`` makes: what breaks the next request, found on the view and the file
(:mod:`.problems`), and mended with the smallest edit that keeps what the model had seen (:mod:`.stage`),
every rewritten entry archived in the store so that ``ctxkit expand`` gives the input back."""
