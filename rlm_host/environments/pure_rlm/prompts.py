"""What the root model of a pure_rlm run is told: the REPL contract, and only metadata about ``context``.

The prompt's size is bounded whatever the context's size: a fixed-length preview and at most
``MAX_LISTED`` document lengths or keys. The first message ends with a worked example for another query (find
the query's main word, read around it, ask a sub-model about that chunk, finish with the variable), then the
query itself: a large model reads it as a hint, a tiny one imitates it with the query's own word and question.
"""

from __future__ import annotations


SYSTEM_PROMPT = """\
You are a Recursive Language Model (RLM). You answer a query about a context that may be far too large to read \
directly. The context is stored in a Python REPL as the variable `context`; you only see a description of it.

Work in steps. In each reply, write Python code in one or more fenced blocks that start with ```repl and end \
with ```. The REPL runs them in order and shows you what they printed; long output is cut, so print sizes, \
slices and summaries rather than whole documents. Variables persist from step to step.

Available in the REPL:
- `llm_query(prompt, model=None) -> str`: ask a sub-model; it reads about 100,000 characters per call. Use it to \
read, extract from or classify chunks of the context.
- `llm_query_batched(prompts) -> list[str]`: many llm_query calls at once, answers in the same order. Prefer it \
over a loop of llm_query calls.
- `rlm_query(prompt, context=None) -> str`: a recursive RLM with its own REPL, for a sub-problem that needs its \
own exploration of the `context` you pass it.
- `rlm_query_batched(prompts, contexts=None) -> list[str]`: several rlm_query runs at once, answers in the same \
order.
- `chunk_indices(total_length, chunk_size, overlap=0)` and `chunk_text(text, chunk_size, overlap=0)`: split text.
{files_help}- `SHOW_VARS()`: list your variables and their types.
- `FINAL(answer)`: finish with this answer. `FINAL_VAR(name)`: finish with the value of the variable called \
`name` (pass the name as a string). `SUBMIT(**fields)`: finish with named fields.

You may also finish by writing FINAL(your answer) or FINAL_VAR(variable_name) at the start of a line outside any \
code block. Do this only when you are done: first examine the context with code. A failed llm_query raises an \
exception in your code; handle it or retry.

Limits: {max_steps} steps, {max_llm_calls} sub-model calls in total.{python_notes}"""

#: Said in the system prompt only when the context is a set of several documents.
FILES_HELP = """\
- `list_files()`: the documents' names (also in `context_names`); `load_file(name)` one document, \
`load_files(names)` several; `switch_to(name)` makes `context` that one document and `switch_to()` the whole set \
again; `remove_file(name)` drops a document from the set.
"""

FIRST_USER_MESSAGE = """\
The variable `context` holds:
{description}

Examine `context` with code before answering, in steps: each reply is one step, ```repl code (or the final \
answer). An example, for another query:

Query: "Which pump broke on day 42, and why?"
Step 1. Find where the query's main word occurs in `context` and print the text around it:
```repl
i = context.find("broke")
print(context[i - 300:i + 300])
```
Step 2. Ask a sub-model the question about that part of `context`:
```repl
answer = llm_query(context[i - 300:i + 300] + "\\n\\nQuestion: Which pump broke on day 42, and why?\\nAnswer in one \
sentence, from the text above.")
print(answer)
```
Step 3. Finish with the answer:
FINAL_VAR(answer)

Your query: "{task}"
Step 1."""

NUDGE_FIRST_ANSWER = (
    "You answered without examining `context`. The answer must come from the context: look at it with code "
    "first (```repl blocks). If you are certain, give the same answer again with FINAL(...).")

NO_CODE = (
    "Your reply had no ```repl code block and no final answer. Write code in a ```repl block to examine "
    "`context`, or finish with FINAL(answer) / FINAL_VAR(variable_name) at the start of a line.")

SYNTHESIS_PROMPT = (
    "You have used all your steps. From everything above, give your best final answer to the query now, as "
    "plain text, without code and without calling FINAL.")

COMPACTION_PROMPT = (
    "Summarise the work so far for your own later use: what you learned about `context` (sizes, structure, "
    "where relevant information is), which variables hold intermediate results, what has been tried and what "
    "remains. Be specific and brief (at most 15 lines).")
