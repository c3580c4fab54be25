"""A hand-written stand-in for tau2-bench's banking_knowledge tools.py (same shapes)."""


class KnowledgeTools(ToolKitBase):
    """Agent tools."""

    @is_tool(ToolType.READ)
    def get_current_time(self) -> str:
        """Get the current time.

        Returns:
            The current time.
        """
        return "now"

    @is_tool(ToolType.WRITE)
    def log_verification(self, user_id: str, method: str, note: str = "") -> str:
        """Log that the customer's identity was verified.

        Args:
            user_id: The ID of the user
            method: How the identity was checked,
                for example by date of birth
            note: Free text

        Returns:
            Logged.
        """
        return "ok"

    @is_tool(ToolType.GENERIC)
    def unlock_discoverable_agent_tool(self, agent_tool_name: str) -> str:
        """Unlock a discoverable agent tool.

        Args:
            agent_tool_name: The tool to unlock
        """
        return "ok"

    @is_tool(ToolType.WRITE)
    def call_discoverable_agent_tool(self, agent_tool_name: str, arguments: dict) -> str:
        """Call a discoverable agent tool.

        Args:
            agent_tool_name: The tool to call
            arguments: Its arguments
        """
        return "ok"

    @is_discoverable_tool(ToolType.WRITE)
    def open_bank_account_4821(self, user_id: str, account_type: str, deposit: float = 0.0) -> str:
        """Open a new bank account for a customer.

        Args:
            user_id (string): The ID of the user
            account_type (string): Checking or savings
            deposit (number): Opening deposit in dollars

        Returns:
            Account opened.
        """
        return "ok"

    @is_discoverable_tool(ToolType.WRITE)
    def close_card_7730(self, card_id: str) -> str:
        """Close a credit card.

        Args:
            card_id (string): The card to close
        """
        return "ok"

    def _helper(self) -> None:
        """Not a tool: no decorator."""


class KnowledgeUserTools(ToolKitBase):
    """Customer tools: never agent tools."""

    @is_tool(ToolType.WRITE)
    def apply_for_credit_card(self, card_type: str) -> str:
        """Apply for a credit card.

        Args:
            card_type: The card
        """
        return "ok"
