"""App entry point: builds the Reflex app and registers the pages."""

import reflex as rx

from chatsapp.pages import chat_page, index_page

app = rx.App(
    theme=rx.theme(appearance="inherit", accent_color="iris", radius="medium"),
)
app.add_page(index_page, route="/", title="Chats")
app.add_page(chat_page, route="/chat/[chat_id]", title="Chats")
