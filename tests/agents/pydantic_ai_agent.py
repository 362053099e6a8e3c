"""pydantic-ai: an agent on an OpenAI model with two tools whose schemas
pydantic-ai builds from the signatures and docstrings."""

from pydantic_ai import Agent

agent = Agent("openai:gpt-4o-mini", instructions="You track parcels.")


@agent.tool_plain
def track_parcel(tracking_id: str, carrier: str = "dhl") -> str:
    """Where a parcel is now.

    Args:
        tracking_id: The carrier's tracking number.
        carrier: Which carrier ships it.
    """
    return "in transit"


@agent.tool_plain
def reroute_parcel(tracking_id: str, address: str) -> str:
    """Send a parcel to another address."""
    return "rerouted"


result = agent.run_sync("Where is 1Z999?")
assert result.output
