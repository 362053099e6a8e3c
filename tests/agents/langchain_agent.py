"""LangChain: ChatOpenAI with bind_tools over a Pydantic model tool and a
@tool function; LangChain turns both into OpenAI function definitions."""

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field


class SearchOrders(BaseModel):
    """Search orders by customer email."""

    email: str = Field(description="The customer's email address.")
    status: str = Field(default="any", description="Only orders in this status.")


@tool
def get_invoice(order_id: str) -> str:
    """Fetch the invoice for an order as structured data."""
    return "{}"


model = ChatOpenAI(model="gpt-4o-mini", max_retries=0).bind_tools([SearchOrders, get_invoice])
reply = model.invoke("Find the orders of ada@example.com")
assert not reply.tool_calls
