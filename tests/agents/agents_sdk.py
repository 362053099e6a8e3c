"""The OpenAI Agents SDK: two function tools and the tools of a real MCP
server (server-everything over stdio, from tests/servers), cut down by a
static tool filter. The SDK converts the MCP schemas and the Python
signatures into the strict function tools it sends the Responses API.
argv[1]: the server-everything entry point (a .js file run with node)."""

import asyncio
import sys

from agents import Agent, Runner, function_tool
from agents.mcp import MCPServerStdio, create_static_tool_filter


@function_tool
def lookup_order(order_id: str) -> str:
    """Look up an order by ID.

    Args:
        order_id: The order ID, e.g. ORD-1234.
    """
    return "shipped"


@function_tool
def refund(order_id: str, amount: float, reason: str = "other") -> str:
    """Refund an order, fully or in part."""
    return "refunded"


async def main():
    async with MCPServerStdio(
        name="everything",
        params={"command": "node", "args": [sys.argv[1], "stdio"]},
        tool_filter=create_static_tool_filter(allowed_tool_names=["echo", "get-sum"]),
        cache_tools_list=True,
    ) as everything:
        agent = Agent(
            name="refunds",
            instructions="You handle refunds.",
            model="gpt-4.1-mini",
            tools=[lookup_order, refund],
            mcp_servers=[everything],
        )
        result = await Runner.run(agent, "Refund ORD-1")
        assert result.final_output


asyncio.run(main())
