"""A small agent eval in Inspect AI, run for real and offline by
crates/toolpin-evals/tests/readers.rs: the mockllm/model plays the agent,
its outputs chosen from each sample's input, so the log has tool calls, a
correct and an incorrect sample, one without tools and one that errors.

    python inspect_task.py LOG_DIR [EPOCHS]

writes one `.eval` log and one `.json` log of the same task to LOG_DIR.
"""

import sys

from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import tool


@tool
def weather_forecast():
    async def execute(city: str):
        """The weather forecast for a city.

        Args:
            city: The city.
        """
        return f"sunny in {city}"

    return execute


@tool
def add():
    async def execute(x: int, y: int):
        """Adds two numbers.

        Args:
            x: The first number.
            y: The second number.
        """
        return str(x + y)

    return execute


@tool
def flaky_lookup():
    async def execute(key: str):
        """Looks a key up (and always breaks).

        Args:
            key: The key.
        """
        raise RuntimeError(f"lookup backend down for {key}")

    return execute


def agent(messages, tools, tool_choice, config):
    """The mock agent: its next output, with a fixed usage (so that the
    mock does not count tokens with tiktoken, which would download its
    encoding)."""
    output = next_output(messages)
    output.usage = ModelUsage(
        input_tokens=100, output_tokens=10, total_tokens=110, total_cost=0.0005
    )
    return output


def next_output(messages):
    """Picks the agent's next output from the conversation so far."""
    question = str(messages[0].content) if messages else ""
    done = [m.function for m in messages if isinstance(m, ChatMessageTool)]
    m = "mockllm/model"
    if "weather" in question:
        if not done:
            return ModelOutput.for_tool_call(m, "weather_forecast", {"city": "Paris"})
        return ModelOutput.from_content(m, "It is sunny in Paris.")
    if "add" in question:
        if len(done) == 0:
            return ModelOutput.for_tool_call(m, "add", {"x": 2, "y": 3})
        if len(done) == 1:
            return ModelOutput.for_tool_call(m, "add", {"x": 5, "y": 1})
        # Wrong on purpose: the sample's target is 5.
        return ModelOutput.from_content(m, "The answer is 6.")
    if "lookup" in question:
        return ModelOutput.for_tool_call(m, "flaky_lookup", {"key": "k1"})
    return ModelOutput.from_content(m, "hello there")


@task
def toolpin_agent(epochs: int = 1):
    return Task(
        dataset=[
            Sample(id="weather-paris", input="What is the weather in Paris?", target="sunny"),
            Sample(id=2, input="Please add 2 and 3, then add 1.", target="5"),
            Sample(id="greeting", input="Say hello.", target="hello"),
            Sample(id="broken-lookup", input="Do a lookup of k1.", target="k1"),
        ],
        solver=[use_tools(weather_forecast(), add(), flaky_lookup()), generate()],
        scorer=includes(),
        epochs=epochs,
    )


def main():
    log_dir = sys.argv[1]
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    for log_format in ("eval", "json"):
        logs = eval(
            toolpin_agent(epochs=epochs),
            model=get_model("mockllm/model", custom_outputs=agent),
            log_dir=log_dir,
            log_format=log_format,
            fail_on_error=False,
            display="none",
        )
        for log in logs:
            print(log.location)


if __name__ == "__main__":
    main()
