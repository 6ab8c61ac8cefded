from agentlaunch.cli import main

main()
