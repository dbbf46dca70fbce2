"""Import formats, one module each; every one yields ``ImportedConversation | Refused``.

* ``native``     this project's export (one chat document, or the ``.zip`` archive)
* ``chatgpt``    a ChatGPT data export (``conversations.json`` / ``conversations-NNN.json``)
* ``claude``     a Claude data export (``conversations.json``)
* ``openwebui``  an Open WebUI chat export (an array of chats, or one)
* ``tree``       what the formats share: ordering a parent-linked tree for import
* ``reading``    what the formats share: streaming records out of JSON with ``ijson``
"""
